"""The LLM summarizer: a model asked for the summary through a completion function.

:mod:`.summarizer` plans each summary as effects (:mod:`.effects`), which a blocking or an
awaiting driver carries out; :mod:`.contexts` builds each request and :mod:`.attempts` asks
it of the models and judges the answers, both under a frozen :mod:`.policy`;
:mod:`.prompts` and :mod:`.answers` write the request and read the reply; :mod:`.chunking`
cuts what does not fit; :mod:`.completion`, :mod:`.clients`, :mod:`.asking` and
:mod:`.dialects` speak to the SDKs and servers.
"""
