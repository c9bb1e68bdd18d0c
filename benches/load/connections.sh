#!/usr/bin/env bash
# Memory per idle keep-alive connection, by listener kind and per-connection read buffer, and
# whether resident memory falls back after the connections close. For each (kind, buffer):
# crawlgate (release) starts, N clients each send one request and stay connected, idle; the
# growth of VmRSS over N is the memory per idle connection. Then every client closes and, after
# SETTLE seconds, VmRSS is read again. Prints one table.
#
#   benches/load/connections.sh                       # N=4000 KINDS="plain tls" BUFFERS="0 4096 16384 65536"
#   N=2000 KINDS=plain BUFFERS="0 16384" benches/load/connections.sh
#
# CPU per request for the same settings: PINGORA="{threads: 1, read_buffer_bytes: B}"
# benches/load/instructions.sh. Needs python3 and openssl. Everything listens on loopback.
set -euo pipefail
cd "$(dirname "$0")/../.."
. benches/load/common.sh
N=${N:-4000}
KINDS=${KINDS:-"plain tls"}
BUFFERS=${BUFFERS:-"0 4096 16384 65536"}
SETTLE=${SETTLE:-5}
CRAWLGATE=${CRAWLGATE:-target/release/crawlgate}
ulimit -n "$(ulimit -Hn)"

cargo build --release --quiet --bin crawlgate
make_work connections
openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost -days 1 \
  -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null

# The origin: answers every request with a small page, keep-alive.
ORIGIN=$(free_port)
python3 - "$ORIGIN" <<'EOF' &
import socket, sys, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1024)
def serve(c):
    buf = b""
    while True:
        data = c.recv(65536)
        if not data: return
        buf += data
        while b"\r\n\r\n" in buf:
            _, buf = buf.split(b"\r\n\r\n", 1)
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
while True:
    c, _ = s.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
EOF
pids+=("$!")
wait_port "$ORIGIN"

rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }

# Holds N idle keep-alive connections (one request answered on each) until told to close.
hold() { # kind port
  python3 - "$1" "$2" "$N" "$work/ready" "$work/release" <<'EOF'
import os, socket, ssl, sys, time
kind, port, count, ready, release = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
context = ssl.create_default_context(); context.check_hostname = False; context.verify_mode = ssl.CERT_NONE
context.set_alpn_protocols(["http/1.1"])
held = []
for i in range(count):
    s = socket.create_connection(("127.0.0.1", port))
    if kind == "tls":
        s = context.wrap_socket(s, server_hostname="localhost")
    s.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\nUser-Agent: Mozilla/5.0 Firefox/128.0\r\n\r\n")
    data = b""
    while not data.endswith(b"hello"):
        chunk = s.recv(4096)
        if not chunk: break
        data += chunk
    held.append(s)
open(ready, "w").close()
while not os.path.exists(release): time.sleep(0.05)
for s in held: s.close()
EOF
}

rows=()
for kind in $KINDS; do
  for buffer in $BUFFERS; do
    port=$(free_port) metrics=$(free_port)
    if [ "$kind" = tls ]; then
      listen="tls_listen: [{addr: \"127.0.0.1:$port\", cert: $work/cert.pem, key: $work/key.pem}]"
    else
      listen="listen: [\"127.0.0.1:$port\"]"
    fi
    cat > "$work/c.yaml" <<EOF
$listen
metrics: {listen: "127.0.0.1:$metrics"}
pingora: {threads: 1, read_buffer_bytes: $buffer}
clients: {max_connections_per_address: 100000}
sites:
  - name: s
    upstream: "127.0.0.1:$ORIGIN"
    robots: {inline: "User-agent: *\nDisallow: /private/\n"}
EOF
    RUST_LOG=warn $PIN_PROXY "$CRAWLGATE" serve --config "$work/c.yaml" 2>>"$work/crawlgate.log" &
    pid=$!
    pids+=("$pid")
    wait_port "$port"
    sleep 1
    rm -f "$work/ready" "$work/release"
    hold "$kind" "$port" & holder=$!
    # Warm-up: the first connections build what every later one shares.
    for _ in $(seq 1 1200); do [ -f "$work/ready" ] && break; sleep 0.1; done
    before=$(rss_kb "$pid")
    # The memory held is measured against a second, identical run of N on top of the first:
    # what one more idle connection costs, lazily built shared state left out.
    rm -f "$work/ready"
    hold "$kind" "$port" & second=$!
    for _ in $(seq 1 1200); do [ -f "$work/ready" ] && break; sleep 0.1; done
    held=$(rss_kb "$pid")
    touch "$work/release"
    wait "$holder" "$second" 2>/dev/null || true
    sleep "$SETTLE"
    after=$(rss_kb "$pid")
    per=$(python3 -c "print(f'{($held - $before) / $N:.1f}')")
    rows+=("$kind $buffer $before $held $after $per")
    kill "$pid"; wait "$pid" 2>/dev/null || true
  done
done
printf '%-6s %12s %14s %14s %16s %16s\n' kind read_buffer "RSS N (KiB)" "RSS 2N (KiB)" "after close" "KB per idle conn"
for row in "${rows[@]}"; do
  read -r kind buffer before held after per <<<"$row"
  printf '%-6s %12s %14s %14s %16s %16s\n' "$kind" "$buffer" "$before" "$held" "$after" "$per"
done
