# The crontab lines that the README and scripts/ print, run as printed.
# shellcheck shell=bash

# The command of each crontab line of the README and scripts/, exactly as
# printed, its five time fields cut off.
cron_commands() {
	grep -hs '^ *\*/[0-9]* \* \* \* \* ' "$KP_ROOT/README" "$KP_ROOT"/scripts/* |
	    sed 's/^ *\*\/[0-9]* \* \* \* \* //'
}

# What a line must be to work pasted alone into a crontab: PATH set in it
# (cron's is /usr/bin:/bin, and make install writes to /usr/local/bin), no
# % (cron makes it a newline), its log appended by its last redirection.
check_cron_line() {
	[[ $1 == PATH=/usr/local/bin:/usr/bin:/bin\;\ * ]] ||
	    fail "the line does not set PATH first: $1"
	[[ $1 != *%* ]] || fail "cron turns % into a newline: $1"
	[[ $1 =~ \ \>\>\ /[^\ \;\|\&\<\>]+$ ]] ||
	    fail "the line does not end with '>> FILE': $1"
}

# Checks what tests/cron-run.sh kept in $1: both runs exit 0 and write
# nothing on standard output; the first says on standard error at most why
# rapl-read estimates, the second nothing; the log's header names ts,
# source and estimated, each row has a ts; kp-plot drew it, silently.
# shellcheck disable=SC2154 # bats' run sets output and lines
check_cron_run() {
	local d=$1 col
	assert_equal "$(cat "$d/rc1") $(cat "$d/rc2")" "0 0"
	assert_equal "$(cat "$d/out1" "$d/out2")" ""
	run -1 grep -v "^rapl-read: .* (--source [a-z]*)$" "$d/err1"
	assert_equal "$(cat "$d/err2")" ""
	run -0 head -n 1 "$d/log.csv"
	for col in ts source estimated; do
		[[ ,$output, == *,$col,* ]] || fail "no $col column: $output"
	done
	# shellcheck disable=SC2016 # awk's program
	run -0 awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
	    $c["ts"] == "" { bad++ } END { print NR - 1, bad + 0 }' "$d/log.csv"
	[[ $output =~ ^[1-9][0-9]*\ 0$ ]] || fail "rows, rows without ts: $output"
	assert_equal "$(cat "$d/plot.rc") $(cat "$d/plot.err")" "0 "
	# The PNG signature: \x89 P N G \r \n \x1a \n.
	assert_equal "$(head -c 8 "$d/log.png" | od -An -tx1 | tr -d ' ')" \
	    89504e470d0a1a0a
}
