"""Runs the client tests (run.sh starts the server and sets PGHOST/PGPORT/PGDATABASE).
    python runtests.py                       every test_*.py here
    python runtests.py test_psycopg          one module
    python runtests.py test_psycopg.PsycopgTest.test_any_list
Prints what each test checked; the last line is "clients: N passed, N failed, N skipped"."""
import importlib.metadata
import sys
import time
import unittest

MODULES = ["test_psycopg", "test_sqlalchemy", "test_django", "test_langchain", "test_langchain_pgvector"]


class Result(unittest.TextTestResult):
    def startTest(self, test):
        self._t0 = time.time()
        self.stream.write(f"--- {test.id()}: {(test.shortDescription() or '').strip()}\n")
        self.stream.flush()
        unittest.TestResult.startTest(self, test)

    def _line(self, test, what):
        self.stream.write(f"{what:4} {test.id()} ({time.time() - getattr(self, '_t0', time.time()):.1f} s)\n")
        self.stream.flush()

    def addSuccess(self, test):
        unittest.TestResult.addSuccess(self, test)
        self._line(test, "ok")

    def addFailure(self, test, err):
        unittest.TestResult.addFailure(self, test, err)
        self._line(test, "FAIL")

    def addError(self, test, err):
        unittest.TestResult.addError(self, test, err)
        self._line(test, "ERROR")

    def addSkip(self, test, reason):
        unittest.TestResult.addSkip(self, test, reason)
        self.stream.write(f"skip {test.id()}: {reason}\n")


def main(argv):
    versions = []
    for p in ("psycopg", "SQLAlchemy", "Django", "numpy", "langchain-postgres"):
        try:
            versions.append(f"{p} {importlib.metadata.version(p)}")
        except importlib.metadata.PackageNotFoundError:
            versions.append(f"{p} (not installed)")
    print(f"python {sys.version.split()[0]}; " + ", ".join(versions), flush=True)
    loader = unittest.TestLoader()
    suite = loader.loadTestsFromNames(argv or MODULES)
    t0 = time.time()
    runner = unittest.TextTestRunner(stream=sys.stdout, verbosity=0, resultclass=Result)
    result = runner.run(suite)
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    passed = result.testsRun - failed - len(result.skipped)
    print(f"client tests took {time.time() - t0:.1f} s")
    print(f"clients: {passed} passed, {failed} failed, {len(result.skipped)} skipped")
    return 0 if failed == 0 and result.testsRun > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
