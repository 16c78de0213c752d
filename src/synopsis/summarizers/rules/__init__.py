"""The offline summarizer: a structured summary made by rules, with no model and no network.

It reads what the messages hold (requests, files, errors, decisions: :mod:`..scanning`,
:mod:`.extractors`, :mod:`.exchanges`), writes the record (:mod:`.summarizer`, :mod:`.digest`)
and fits it into its token budget (:mod:`.budget`, :mod:`.drafts`).
"""
