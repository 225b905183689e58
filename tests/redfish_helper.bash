# shellcheck shell=bash
# What the redfish tests share: a CA and a server certificate made by
# openssl, the test Redfish service (tests/redfish-server.py) on 127.0.0.1
# serving the public-rackmount1 mockup, and the credentials file.

# make_certs DIR: ca.pem, a server certificate for 127.0.0.1 signed by it,
# and other-ca.pem, a CA that signed nothing here.
make_certs() {
	local d=$1
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -subj /CN=kp-test-ca -days 2 -keyout "$d/ca.key" -out "$d/ca.pem" \
	    2> /dev/null
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -subj /CN=kp-other-ca -days 2 -keyout "$d/other.key" \
	    -out "$d/other-ca.pem" 2> /dev/null
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -subj /CN=127.0.0.1 -keyout "$d/server.key" -out "$d/server.csr" \
	    2> /dev/null
	printf 'subjectAltName=IP:127.0.0.1\n' > "$d/ext"
	openssl x509 -req -in "$d/server.csr" -CA "$d/ca.pem" \
	    -CAkey "$d/ca.key" -CAcreateserial -days 2 -extfile "$d/ext" \
	    -out "$d/server.pem" 2> /dev/null
}

# start_bmc: the service on a copy of the mockup ($TREE), its state
# directory $BMC, its URL $URL; the credentials in $CRED (mode 0600).
start_bmc() {
	TREE=$(fixture_copy redfish)/public-rackmount1
	BMC=$BATS_TEST_TMPDIR/bmc
	mkdir -p "$BMC"
	CRED=$BATS_TEST_TMPDIR/cred
	printf 'admin\ns3cr3t-Pa55\n' > "$CRED"
	chmod 600 "$CRED"
	python3 "$KP_ROOT/tests/redfish-server.py" "$TREE" "$BMC" \
	    "$CERTS/server.pem" "$CERTS/server.key" "$CRED" &
	BMC_PID=$!
	while [ ! -e "$BMC/port" ]; do
		sleep 0.05
	done
	URL=https://127.0.0.1:$(cat "$BMC/port")
}

stop_bmc() {
	if [ -n "${BMC_PID:-}" ]; then
		kill "$BMC_PID"
		wait "$BMC_PID" || true
	fi
}

# rf [OPTION...]: rapl-read from the service, its CA trusted.
rf() {
	rapl-read --source redfish --bmc "$URL" --bmc-credentials "$CRED" \
	    --bmc-ca "$CERTS/ca.pem" "$@"
}

# The requests for the resource read, counted in the service's log.
reads_of() {
	grep -c "^GET $1\$" "$BMC/log" || true
}
