# The two commands of the README. Both install what is missing and are safe to re-run.
.PHONY: run test setup build check

run: setup
	scripts/run.sh

test: setup
	scripts/test.sh

setup:
	scripts/setup.sh

build: setup
	scripts/build.sh

# Fast feedback while editing (no codegen).
check:
	bash -c 'source scripts/toolchain.sh && cargo check --workspace --exclude frontrow-frontend --tests'
