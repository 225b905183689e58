# shellcheck shell=bash
# What the tests of the BMC sources share (rapl-read(1), The BMC sources).

# fails_later BREAK COMMAND...: runs COMMAND, its records in
# $BATS_TEST_TMPDIR/out and its messages in .../err, until its first
# interval has been written; then BREAK (a command that makes the BMC
# fail) and waits for COMMAND to give up.  Its exit status is in $rc; the
# lowest power of its records marked failed_requests in $carried_watts.
# shellcheck disable=SC2034 # rc and carried_watts are the caller's
fails_later() {
	local pid out=$BATS_TEST_TMPDIR/out
	"${@:2}" > "$out" 2> "$BATS_TEST_TMPDIR/err" &
	pid=$!
	until grep -q '"interval"' "$out"; do
		sleep 0.05
	done
	eval "$1"
	rc=0
	wait "$pid" || rc=$?
	carried_watts=$(jq -s \
	    '[.[] | select(.failed_requests > 0) | .watts] | min' "$out")
}
