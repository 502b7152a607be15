"""Pass numpy arrays to psycopg 3 as query vectors.

    import psycopg, numpy_adapter
    conn = psycopg.connect(...)
    numpy_adapter.register(conn)          # or register(psycopg) for every connection
    conn.execute("SELECT id FROM docs ORDER BY embedding <-> %s LIMIT 10", (np_vector,))

psycopg has no dumper for numpy.ndarray.  This one sends a 1-d array as a double precision[]
literal; gateann's operators take a double precision[] query against a real[] column (and the
value converts as a cast to real[] would).  Without it, pass vector.tolist() instead.
"""
import numpy as np
import psycopg
from psycopg.adapt import Dumper


class NdarrayDumper(Dumper):
    oid = psycopg.adapters.types["float8"].array_oid  # double precision[]

    def dump(self, obj):
        # repr() of a Python float is the shortest text that reads back as the same value
        return ("{" + ",".join(repr(x) for x in obj.astype(np.float64).ravel().tolist()) + "}").encode()


def register(context):
    """context: psycopg (global), a connection or a cursor."""
    context.adapters.register_dumper(np.ndarray, NdarrayDumper)
