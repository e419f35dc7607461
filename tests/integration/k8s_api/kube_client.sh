#!/usr/bin/env bash
# The API server client (kube.c) against the stand-in: REST calls, error
# mapping, timeouts, watches, in-cluster and kubeconfig credentials
# (gs-kube-client-test does the checking).
. "$(dirname "$0")/lib.sh" "$1"

T=$B/tests/gs-kube-client-test
[ -x "$T" ] || { echo "SKIP: gs-kube-client-test not built"; exit 77; }
command -v openssl >/dev/null || { echo "SKIP: no openssl to make a test certificate"; exit 77; }

openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=standin \
	-addext subjectAltName=IP:127.0.0.1 -keyout "$WORK/key.pem" \
	-out "$WORK/cert.pem" >/dev/null 2>&1 || fail "openssl could not make a certificate"
TOKEN=tok-$RANDOM$RANDOM
standin_up plain --token "$TOKEN" --bookmark-ms 200
standin_up tls --token "$TOKEN" --tls-cert "$WORK/cert.pem" --tls-key "$WORK/key.pem"
# A port where nothing listens: bind, note, close.
DEAD=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

GS_STANDIN_URL=http://127.0.0.1:$PORT_plain GS_STANDIN_TLS=$PORT_tls \
GS_STANDIN_TOKEN=$TOKEN GS_CA_FILE=$WORK/cert.pem GS_WORK=$WORK \
GS_DEAD_URL=http://127.0.0.1:$DEAD "$T"
echo "ok: kube client"
