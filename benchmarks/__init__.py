"""Benchmarks: ``python -m benchmarks`` runs every ``bench_*`` module's ``main()``."""
