# run CMD ARGS...: show the command as "$ CMD ARGS" on stderr, then run it.
# On stderr, so that `run attn explain ... >file.json` leaves file.json what
# the command wrote (the quick start's explain.json once began with the echoed
# command line, and no JSON reader could open it). Sourced by the scripts.
run() { printf '$ %s\n' "$*" >&2; "$@"; }
