#!/usr/bin/env bash
# What the whole test suite needs beyond scripts/install-deps.sh: Debian's
# chromium for the browser test (tests/browser/page.test.mjs), and that test's
# npm packages (playwright-core, pinned by tests/browser/package-lock.json);
# pytest and matplotlib for the Python module's tests and its docs example
# (python/tests, docs/python.md).
# Apart from install-deps.sh so that the quick start installs no browser.
# Node.js and npm come with the machine; where they do not, Debian's are
# installed (playwright-core 1.65 wants Node.js 20 or later).
set -euo pipefail
cd "$(dirname "$0")/.."
extra=(chromium python3-pytest python3-matplotlib)
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then extra+=(nodejs npm); fi
bash scripts/install-deps.sh "${extra[@]}"
# npm ci: exactly the locked versions, node_modules made anew
(cd tests/browser && npm ci --no-audit --no-fund --loglevel=error)
