#!/usr/bin/env bats
# The Prometheus path with the real components: promtool checks kp-fmt's
# exposition, node_exporter serves it from a textfile, and a Prometheus
# server scrapes node_exporter and answers a PromQL query with kp's joules.
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
		kp-fmt -f prometheus <"$STREAMS/$f.ndjson" >"$BATS_TEST_TMPDIR/$f.all"
		# One exposition per interval, each ended by an empty line.
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

@test "a Prometheus server scraping node_exporter returns kp's joules over PromQL" {
	local dir=$BATS_TEST_TMPDIR/textfile q v
	mkdir "$dir"
	kp-fmt --textfile "$dir/kp.prom" <"$TWO"
	start_node_exporter "$dir"
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
