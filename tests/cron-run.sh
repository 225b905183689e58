#!/bin/bash
# cron-run.sh DIR COMMAND: runs the command of a crontab line as cron(8)
# does (/bin/sh -c, with only PATH, SHELL and HOME in its environment),
# twice, 1.5 s apart, and keeps in DIR each run's status (rc1, rc2),
# output (out1, out2) and errors (err1, err2), a copy of the log that it
# appends to (log.csv, named by its last redirection, ">> FILE"), and the
# chart the installed kp-plot draws of it (log.png, plot.rc, plot.err).
# The tests run it where the programs are installed, in a mount namespace.
set -u
dir=$1 cmd=$2
for i in 1 2; do
	[ "$i" -eq 1 ] || sleep 1.5
	env -i PATH=/usr/bin:/bin SHELL=/bin/sh HOME=/root /bin/sh -c "$cmd" \
	    >"$dir/out$i" 2>"$dir/err$i"
	echo $? >"$dir/rc$i"
done
log=${cmd##*>> }
cp "$log" "$dir/log.csv"
env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root \
    kp-plot -o "$dir/log.png" "$log" 2>"$dir/plot.err"
echo $? >"$dir/plot.rc"
