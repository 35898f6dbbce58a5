# Makefile for dlsm (PGXS)

MODULE_big = dlsm
OBJS = \
	$(WIN32RES) \
	src/api.o \
	src/args.o \
	src/bgw.o \
	src/bound.o \
	src/capacity.o \
	src/capture.o \
	src/claim.o \
	src/deadletter.o \
	src/dedup.o \
	src/dlsm.o \
	src/duration.o \
	src/extension.o \
	src/fence.o \
	src/floor.o \
	src/guc.o \
	src/handler.o \
	src/hooks.o \
	src/identity.o \
	src/usercode.o \
	src/launcher.o \
	src/grouplimit.o \
	src/locks.o \
	src/namedlock.o \
	src/names.o \
	src/notify.o \
	src/pending.o \
	src/plans.o \
	src/pool.o \
	src/querytext.o \
	src/queue.o \
	src/queuehandler.o \
	src/rate.o \
	src/relay.o \
	src/shmem.o \
	src/state.o \
	src/subxact.o \
	src/views.o \
	src/waits.o \
	src/wake.o \
	src/worker.o

EXTENSION = dlsm
EXTVERSION = $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" dlsm.control)
DATA = sql/dlsm--1.0.sql sql/dlsm--1.1.sql sql/dlsm--1.2.sql sql/dlsm--1.3.sql sql/dlsm--1.4.sql sql/dlsm--1.5.sql sql/dlsm--1.6.sql \
	sql/dlsm--1.0--1.1.sql sql/dlsm--1.1--1.2.sql sql/dlsm--1.2--1.3.sql \
	sql/dlsm--1.3--1.4.sql sql/dlsm--1.4--1.5.sql sql/dlsm--1.5--1.6.sql
PGFILEDESC = "dlsm - distributed lock state machine"
# the manual: installed into share/doc/extension/dlsm/ (docmoduledir, set
# below after PGXS, keeps its generic page names apart from other extensions')
DOCS = README.md CHANGELOG.md $(wildcard doc/*.md)

REGRESS = queue claim settle group handler locks register capture errors privileges fences definer limits waitcreate deadletter dedup stale durations statistics drift
REGRESS_OPTS = --inputdir=test/regress

ISOLATION = article claim_race create_wait create_first busy_head group_busy settle_race reap_unit wake notify_commit lock_fifo lock_lease pending floor group_limit group_prepared create_late requeue_race dedup_race dedup_rollback capture_locks capture_drop dedup_requeue dedup_settle limit_change requeue_settle
ISOLATION_OPTS = --inputdir=test/isolation

TAP_TESTS = 1
PROVE_TESTS = test/t/*.pl
# the TAP tests find the tree through TESTDIR, which PGXS sets up to
# PostgreSQL 15 only (16 and later run them from the tree, saying nothing)
export TESTDIR ?= $(CURDIR)

PG_CPPFLAGS = -I$(srcdir)/src

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

docmoduledir = extension/dlsm

# every object depends on the headers
$(OBJS): $(wildcard src/*.h)

# pgTAP: the shape of the API
installcheck-pgtap:
	pg_prove --ext .sql -r test/pgtap

.PHONY: installcheck-pgtap

# valgrind memcheck: the regress and isolation suites against a server run
# under valgrind; fails on any valgrind error with a frame in dlsm.so
installcheck-valgrind:
	bash test/valgrind.sh REGRESS="$(REGRESS)" ISOLATION="$(ISOLATION)"

.PHONY: installcheck-valgrind

# the same suites against a dlsm.so built with -fsanitize=undefined, in a
# private copy of the installation (the installed dlsm.so is left alone)
installcheck-ubsan:
	bash test/ubsan.sh REGRESS="$(REGRESS)" ISOLATION="$(ISOLATION)"

.PHONY: installcheck-ubsan

# PGXN release: dlsm-<META.json's version>.zip of the committed tree (git
# archive of HEAD), in DIST_DIR (default: here).  `pgxn install` takes it
# as it is; test/pgxn/run.sh installs it and claims through it.
GIT ?= git
DIST_DIR ?= .
DISTVERSION = $(shell perl -MJSON::PP -e 'local $$/; open my $$f, "<", "$(srcdir)/META.json" or die; print decode_json(<$$f>)->{version}')

dist:
	$(GIT) -C $(srcdir) archive --format=zip --prefix=$(EXTENSION)-$(DISTVERSION)/ \
		-o $(abspath $(DIST_DIR))/$(EXTENSION)-$(DISTVERSION).zip HEAD
	@echo "$(abspath $(DIST_DIR))/$(EXTENSION)-$(DISTVERSION).zip"

.PHONY: dist
