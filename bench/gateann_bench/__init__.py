"""gateann's benchmark suite: presets, tools and the libraries they share.

One entry point, __main__.py:

    python3 -m gateann_bench NAME [ARGS]      (bench/ on sys.path: cd bench, or PYTHONPATH=bench)
    python3 bench/gateann_bench NAME [ARGS]   (the same, from anywhere)

bench/run.sh runs it for every preset.  Importing the package loads nothing
else: each module is imported when it is named (results_page needs only the
standard library; the rest need bench/.venv's numpy and psycopg).
"""
