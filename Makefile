# The two commands of the README. Both install what is missing and are safe to re-run.
.PHONY: run test test-failover setup build check bench map-bench

run:
	scripts/setup.sh --run
	scripts/run.sh

test: setup
	scripts/test.sh

# Losing the database machine: a pg_auto_failover primary and synchronous
# standby behind HAProxy (scripts/ha), the primary killed mid-sale, and a
# point-in-time restore of a backup taken mid-sale. CI runs it after `test`.
test-failover: setup
	scripts/test_failover.sh

setup:
	scripts/setup.sh

build: setup
	scripts/build.sh

# Fast feedback while editing (no codegen).
check:
	bash -c 'source scripts/toolchain.sh && cargo check --workspace --exclude frontrow-frontend --tests'

# The load scenarios against a release build; writes bench/REPORT.md
# (FRONTROW_BENCH_SCALE sizes them, default 0.1 of the issue's).
bench: setup
	scripts/bench.sh

# Stadium-scale figures: Chromium time to a seat selected and bytes before
# it, live fan-out to 5,000 and 50,000 viewers; writes bench/MAPS.md.
map-bench: setup
	scripts/map_bench.sh
