#!/usr/bin/env bats
# The Prometheus path with the real components: promtool checks kp-fmt's
# exposition, node_exporter serves it from a textfile, and a Prometheus
# server scrapes node_exporter and answers a PromQL query with kp's joules;
# then every query of Kepler's dashboards and documentation, over a history
# of node_exporter's pages stored at fixed times.
# Every server listens on 127.0.0.1 only, on a free port, and is stopped
# by its PID in teardown.

load test_helper

setup() {
	STREAMS=$FIXTURES/streams
	TWO=$STREAMS/two-intervals.ndjson
	PIDS=()
	local c
	for c in promtool prometheus prometheus-node-exporter curl; do
		command -v "$c" >/dev/null ||
		    fail "$c is not installed (see the README's apt-get list)"
	done
}

teardown() {
	local pid
	for pid in "${PIDS[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${PIDS[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
}

# A TCP port on 127.0.0.1 that nothing listens on now.
free_port() {
	python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# Polls URL $1 until its body matches the extended regexp $2, for at most
# $3 tenths of a second; the body is left in $BATS_TEST_TMPDIR/body.
poll() {
	local i
	for ((i = 0; i < $3; i++)); do
		if curl -fsS "$1" -o "$BATS_TEST_TMPDIR/body" 2>/dev/null &&
		    grep -Eq "$2" "$BATS_TEST_TMPDIR/body"; then
			return 0
		fi
		sleep 0.1
	done
	echo "no '$2' from $1 in $(($3 / 10)) s; last body:" >&2
	cat "$BATS_TEST_TMPDIR/body" >&2 2>/dev/null
	return 1
}

# node_exporter with only the textfile collector, on directory $1; sets
# NE_PORT.
start_node_exporter() {
	NE_PORT=$(free_port)
	prometheus-node-exporter --web.listen-address="127.0.0.1:$NE_PORT" \
	    --collector.disable-defaults --collector.textfile \
	    --collector.textfile.directory="$1" \
	    >"$BATS_TEST_TMPDIR/ne.log" 2>&1 3>&- &
	PIDS+=($!)
	poll "http://127.0.0.1:$NE_PORT/metrics" '^node_textfile_scrape_error' 50
}

@test "promtool check metrics accepts the exposition of a fixture run" {
	local f
	for f in two-intervals no-totals odd-names total-reset; do
		expositions "$STREAMS/$f.ndjson" >"$BATS_TEST_TMPDIR/$f.all"
		# The exposition after each interval, each ended by an empty
		# line.
		awk -v d="$BATS_TEST_TMPDIR/$f" 'BEGIN { n = 1 }
		    /^$/ { n++; next } { print > (d "." n ".prom") }' \
		    "$BATS_TEST_TMPDIR/$f.all"
	done
	for f in "$BATS_TEST_TMPDIR"/*.prom; do
		run -0 promtool check metrics <"$f"
		assert_output ""
	done
	# promtool does find faults: a counter without _total, say.
	sed 's/_joules_total/_joules/' "$BATS_TEST_TMPDIR/two-intervals.1.prom" \
	    >"$BATS_TEST_TMPDIR/bad"
	run promtool check metrics <"$BATS_TEST_TMPDIR/bad"
	assert_output --partial "counter metrics should have \"_total\" suffix"
}

@test "node_exporter serves the textfile: kepler_* and no scrape error" {
	local dir=$BATS_TEST_TMPDIR/textfile
	mkdir "$dir"
	kp-fmt --textfile "$dir/kp.prom" <"$TWO"
	start_node_exporter "$dir"
	run -0 curl -fsS "http://127.0.0.1:$NE_PORT/metrics"
	assert_line "node_textfile_scrape_error 0"
	assert_line 'kepler_node_cpu_joules_total{path="",zone="package"} 5076.000123'
	assert_line 'kepler_pod_cpu_joules_total{pod_id="1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d",pod_name="",pod_namespace="",zone="package"} 27.26188'
	assert_line --partial 'kepler_process_cpu_watts{comm="burn",container_id="3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899",exe="",pid="42",pod_id="1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d",state="running",type="container",vm_id="",zone="package"} 15.886'
	assert_line "# TYPE kepler_node_cpu_joules_total counter"
}

# A Prometheus server scraping node_exporter (NE_PORT) every second, as job
# kp; sets P_PORT.
start_prometheus() {
	P_PORT=$(free_port)
	cat >"$BATS_TEST_TMPDIR/prometheus.yml" <<EOF2
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: kp
    static_configs:
      - targets: ['127.0.0.1:$NE_PORT']
EOF2
	run -0 promtool check config "$BATS_TEST_TMPDIR/prometheus.yml"
	prometheus --config.file="$BATS_TEST_TMPDIR/prometheus.yml" \
	    --storage.tsdb.path="$BATS_TEST_TMPDIR/tsdb" \
	    --web.listen-address="127.0.0.1:$P_PORT" \
	    >"$BATS_TEST_TMPDIR/prometheus.log" 2>&1 3>&- &
	PIDS+=($!)
}

@test "a Prometheus server scraping node_exporter returns kp's joules over PromQL" {
	local dir=$BATS_TEST_TMPDIR/textfile q v
	mkdir "$dir"
	kp-fmt --textfile "$dir/kp.prom" <"$TWO"
	start_node_exporter "$dir"
	start_prometheus
	q='http://127.0.0.1:'$P_PORT'/api/v1/query?query=kepler_node_cpu_joules_total'
	poll "$q" '"result":\[\{' 200
	run -0 jq -r '.data.result[] | "\(.metric.zone) \(.metric.job) \(.value[1])"' "$BATS_TEST_TMPDIR/body"
	assert_output - <<'EOF2'
dram kp 609.100456
package kp 5076.000123
EOF2
	# The sum over pods, as a dashboard would ask for it.
	v=$(curl -fsS --get "http://127.0.0.1:$P_PORT/api/v1/query" \
	    --data-urlencode 'query=sum(kepler_pod_cpu_joules_total)' |
	    jq -r '.data.result[0].value[1]')
	assert_equal "$v" "$(awk 'BEGIN { printf "%.6f", (27261880 + 3245102) / 1e6 }')"
}

@test "kp_energy_source_info puts estimated and the model on Kepler's watts, as kp-fmt(1) joins them" {
	local dir=$BATS_TEST_TMPDIR/textfile q
	mkdir "$dir"
	kp-attribute <"$STREAMS/model.ndjson" | kp-fmt --textfile "$dir/kp.prom"
	start_node_exporter "$dir"
	start_prometheus
	q=$(jq -rn --arg q 'kepler_node_cpu_watts * on (node_name, zone) group_left (estimated, model) kp_energy_source_info' '$q | @uri')
	poll "http://127.0.0.1:$P_PORT/api/v1/query?query=$q" '"result":\[\{' 200
	run -0 jq -r '.data.result[] | "\(.metric.zone) \(.metric.estimated) \(.metric.model) \(.value[1])"' "$BATS_TEST_TMPDIR/body"
	assert_output "platform true amd-zen4 27"
}

@test "node_exporter serves every sample of a whole pipeline's levels, none dropped" {
	local dir=$BATS_TEST_TMPDIR/textfile want got
	mkdir "$dir"
	"$KP_ROOT/scripts/kp-gen" --intervals 3 --processes 40 --churn 300 |
	    kp-attribute | kp-aggregate --level container,pod,vm,unit |
	    kp-fmt --textfile "$dir/kp.prom"
	start_node_exporter "$dir"
	run -0 curl -fsS "http://127.0.0.1:$NE_PORT/metrics"
	assert_line "node_textfile_scrape_error 0"
	# node_exporter drops a repeated series without a word: count them.
	want=$(grep -c '^k[ep]' "$dir/kp.prom")
	got=$(grep -c '^k[ep]' <<<"$output")
	assert_equal "$got" "$want"
	assert_line --regexp '^kp_unit_cpu_joules_total\{state="running",unit="svc[0-9]+\.service",zone="package"\} '
	assert_line --regexp '^kp_host_cpu_joules_total\{level="container",zone="package"\} '
}

# The fixture host of Kepler's dashboards: kp-aggregate's output over four
# 60 s intervals of kepler-host-producer.ndjson, what rapl-read -z
# package,dram,node | proc-cputime -a writes on such a host
# (tests/fixtures/kepler/queries.tsv describes it), and the PromQL of
# Kepler's dashboards and documentation.
KEPLER_HOST=$FIXTURES/streams/kepler-host.ndjson
KEPLER_QUERIES=$FIXTURES/kepler/queries.tsv
# Its intervals end at T0 + 60 s, + 120 s, ...: 2026-11-22T12:00:00Z.
KEPLER_T0=1795348800

# kp-fmt --textfile $2 on the fixture host's first $1 intervals.
kepler_textfile() {
	awk -v n="$1" '{ print } /"type":"interval"/ && ++k == n { exit }' \
	    "$KEPLER_HOST" | kp-fmt --textfile "$2"
}

# node_exporter's page at time $1 (seconds) as Prometheus stores a scrape of
# it: each sample with the target's labels and the time, in OpenMetrics.
kepler_scraped() {
	local labels="job=\"kp\",instance=\"127.0.0.1:$NE_PORT\",container=\"power-monitor\""
	curl -fsS "http://127.0.0.1:$NE_PORT/metrics" | grep -v '^#' | sed -E \
	    -e "s/^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\} ([^ ]+)\$/\1{$labels,\2} \3 $1/" \
	    -e t -e "s/^([a-zA-Z_:][a-zA-Z0-9_:]*) ([^ ]+)\$/\1{$labels} \2 $1/"
}

# A query as Grafana sends it: the dashboards' variables set, "All" for a
# multi-value one matched by a regexp; the pid is nginx's.
kepler_substitute() {
	sed -E -e 's/=~"\$\{?(zone|node|namespace|pod|container|vm)\}?"/=~".*"/g' \
	    -e 's/="\$\{?zone\}?"/="package"/g' \
	    -e 's/\$\{?(process|pid)\}?/2101/g' -e 's/\$\{?job\}?/kp/g' \
	    -e 's/\$__rate_interval/1m/g' \
	    -e 's/\$watt_per_second_to_kWh/0.000000277777777777778/g' \
	    -e 's/\$coal/2.23/g; s/\$petroleum/2.13/g; s/\$natural_gas/0.91/g' \
	    <<<"$1"
}

# Runs query $1 at time $2 as Grafana would, label_values() by the label
# values API over the 15 minutes before it; prints the rows, one JSON
# object of labels a line (a label value as {"value": v}).
kepler_rows() {
	local q=$1 api=http://127.0.0.1:$P_PORT/api/v1 metric label
	case $q in
	label_values\(*)
		q=${q#label_values(}
		q=${q%)}
		metric=${q%,*}
		label=$(tr -d ' ' <<<"${q##*,}")
		curl -fsS --get "$api/label/$label/values" \
		    --data-urlencode "match[]=$metric" \
		    --data-urlencode "start=$(($2 - 900))" \
		    --data-urlencode "end=$2" | jq -c '.data[] | {value: .}'
		;;
	query_result\(*)
		q=${q#query_result(}
		kepler_rows "${q%)}" "$2"
		;;
	*)
		curl -fsS --get "$api/query" --data-urlencode "query=$q" \
		    --data-urlencode "time=$2" | jq -c '.data.result[] | .metric'
		;;
	esac
}

# The number of kp's series at time $1 (now if none), and their labels.
kepler_count() {
	curl -fsS --get "http://127.0.0.1:$P_PORT/api/v1/query" \
	    --data-urlencode 'query={__name__=~"kepler_.+|kp_.+"}' \
	    ${1:+--data-urlencode "time=$1"} |
	    jq -c '.data.result | [length, (map(.metric | keys) | add // [] | unique)]'
}

# What query line $1 (ID, EXPECT, QUERY) gets that it should not: nothing,
# or the reason, on one line.
kepler_check() {
	local id expect query want labels rows l
	IFS=$'\t' read -r id expect query <<<"$1"
	query=$(kepler_substitute "$query")
	[[ $query != *'$'* ]] || { echo "$id: a variable left in: $query"; return; }
	want=$(sed -nE 's/.*rows=([0-9]+).*/\1/p' <<<"$expect")
	labels=$(sed -nE 's/.*labels=([a-z_,]+).*/\1/p' <<<"$expect")
	rows=$(kepler_rows "$query" "$2") || { echo "$id: the query failed"; return; }
	[ "$(grep -c . <<<"$rows")" -eq "$want" ] ||
	    { echo "$id: $(grep -c . <<<"$rows") rows, not $want"; return; }
	for l in ${labels//,/ }; do
		if jq -e --arg l "$l" '(.[$l] // "") == ""' <<<"$rows" >/dev/null; then
			echo "$id: a row without $l"
			return
		fi
	done
}

@test "the fixture host is what kp-attribute and kp-aggregate write" {
	run -0 bash -c 'kp-attribute <"$1" | kp-aggregate --level container,pod,vm' \
	    _ "$FIXTURES/streams/kepler-host-producer.ndjson"
	assert_equal "$output" "$(cat "$KEPLER_HOST")"
	# With the names its producer's proc records give each group.
	run -0 jq -r 'select(.type == "container") | "\(.container_name) \(.pod_name // "-") \(.pod_namespace // "-") \(.runtime)"' "$KEPLER_HOST"
	assert_equal "$(sort -u <<<"$output" | paste -sd,)" \
	    "coredns coredns-5d78c9869d-4xk2p kube-system containerd,nginx web-7d9f8c6b5-x2x7q shop containerd,php-fpm web-7d9f8c6b5-x2x7q shop containerd,postgres db-0 shop containerd,redis - - docker"
}

@test "Kepler's dashboards and documented PromQL answer in their shape over kp's textfile" {
	local dir=$BATS_TEST_TMPDIR/textfile om=$BATS_TEST_TMPDIR/scrapes.om
	local t_end=$((KEPLER_T0 + 240)) j line why got want answered=0 skipped=0 wrong=()
	mkdir "$dir"
	kepler_textfile 1 "$dir/kp.prom"
	start_node_exporter "$dir"
	# Prometheus's history: a scrape of node_exporter every 15 s, each of
	# the textfile of the last interval ended, from the first interval's end
	# to the last's (T0 + 240 s), where the queries are evaluated.
	for ((j = 4; j <= 16; j++)); do
		kepler_textfile $((j / 4)) "$dir/kp.prom"
		run -0 promtool check metrics <"$dir/kp.prom"
		kepler_scraped $((KEPLER_T0 + 15 * j)) >>"$om"
	done
	echo '# EOF' >>"$om"
	run -0 promtool tsdb create-blocks-from openmetrics "$om" "$BATS_TEST_TMPDIR/tsdb"
	# And Prometheus itself scrapes node_exporter, with the same labels.
	P_PORT=$(free_port)
	cat >"$BATS_TEST_TMPDIR/prometheus.yml" <<EOF2
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: kp
    static_configs:
      - targets: ['127.0.0.1:$NE_PORT']
        labels:
          container: power-monitor
EOF2
	prometheus --config.file="$BATS_TEST_TMPDIR/prometheus.yml" \
	    --storage.tsdb.path="$BATS_TEST_TMPDIR/tsdb" \
	    --storage.tsdb.retention.time=100y \
	    --web.listen-address="127.0.0.1:$P_PORT" \
	    >"$BATS_TEST_TMPDIR/prometheus.log" 2>&1 3>&- &
	PIDS+=($!)
	# What it scrapes is the series the history holds at its end: waited
	# for, since Prometheus starts and scrapes in its own time.
	for ((j = 0; j < 300; j++)); do
		want=$(kepler_count "$t_end" 2>/dev/null) &&
		    got=$(kepler_count 2>/dev/null) &&
		    [ -n "$want" ] && [ "$got" = "$want" ] && break
		sleep 0.1
	done
	assert_equal "$got" "$want"
	assert_equal "$(jq '.[0]' <<<"$want")" \
	    "$(grep -c '^k[ep]' "$dir/kp.prom")"
	while IFS= read -r line; do
		[[ $line == \#* || -z $line ]] && continue
		if [[ $(cut -f2 <<<"$line") == skip:* ]]; then
			skipped=$((skipped + 1))
			continue
		fi
		why=$(kepler_check "$line" "$t_end")
		if [ -n "$why" ]; then
			wrong+=("$why")
		else
			answered=$((answered + 1))
		fi
	done <"$KEPLER_QUERIES"
	echo "# $answered queries answered in their shape, ${#wrong[@]} not; $skipped cannot be answered on such data" >&3
	[ "${#wrong[@]}" -eq 0 ] || fail "$(printf '%s\n' "${wrong[@]}")"
	[ "$answered" -gt 0 ]
}
