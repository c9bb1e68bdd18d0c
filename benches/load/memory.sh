#!/usr/bin/env bash
# Resident memory of crawlgate: idle, with a 500 KiB robots.txt, with 1,000 sites, and holding
# 10,000 concurrent keep-alive connections. Prints one table (VmRSS from /proc, in MiB).
#
#   benches/load/memory.sh
#
# Needs nginx (the origin) and python3. Everything listens on loopback.
set -euo pipefail
cd "$(dirname "$0")/../.."
. benches/load/common.sh
CONNECTIONS=${CONNECTIONS:-10000}
PINGORA=${PINGORA:-"{threads: 2}"}   # the pingora section of every configuration
ulimit -n "$(ulimit -Hn)"   # 10k connections need 10k descriptors on each side

cargo build --release --quiet --bin crawlgate
make_work memory
ORIGIN=$(free_port)
mkdir -p "$work/www" "$work/logs"
echo '<html>page</html>' > "$work/www/index.html"
cat > "$work/origin.conf" <<EOF
worker_processes 1;
pid $work/origin.pid;
error_log $work/logs/origin.log;
events { worker_connections 1024; }
http { access_log off; server { listen 127.0.0.1:$ORIGIN; root $work/www; location / { try_files \$uri /index.html; } } }
EOF
nginx -c "$work/origin.conf" -p "$work"

printf 'User-agent: GPTBot\nDisallow: /\n\nUser-agent: *\nDisallow: /private/\n' > "$work/small.txt"
if [ -f "$LARGE_SOURCE" ]; then head -c 512000 "$LARGE_SOURCE" > "$work/large.txt"; else
  { echo "User-agent: *"; for i in $(seq 1 12000); do echo "Disallow: /section-$((i % 97))/item-$i/"; done; } > "$work/large.txt"; fi

rss() { awk '/^VmRSS/ {printf "%.1f", $2/1024}' "/proc/$1/status"; }
start() { # config → pid, listen port
  local port; port=$(free_port)
  sed "s/LISTEN/127.0.0.1:$port/" "$1" > "$1.run"
  RUST_LOG=warn target/release/crawlgate serve --config "$1.run" 2>>"$work/logs/crawlgate.log" &
  local pid=$!
  pids+=("$pid")
  wait_port "$port" >&2
  echo "$pid $port"
}
site() { # name robots hosts-line
  printf '  - name: %s\n%s    upstream: "127.0.0.1:%s"\n    robots: {file: %s}\n' "$1" "$3" "$ORIGIN" "$2"
}
one_site() { printf 'listen: ["LISTEN"]\npingora: %s\nsites:\n' "$PINGORA"; site "$1" "$2" ""; }

one_site one "$work/small.txt" > "$work/idle.yaml"
one_site one "$work/large.txt" > "$work/large.yaml"
{ printf 'listen: ["LISTEN"]\npingora: %s\nsites:\n' "$PINGORA"
  for i in $(seq 1 1000); do site "s$i" "$work/small.txt" "    hosts: [s$i.test]
"; done; } > "$work/sites.yaml"

report=()
read -r pid port < <(start "$work/idle.yaml"); sleep 1
report+=("idle, one site, small robots.txt|$(rss "$pid")")
# Touch it once so that lazily built state exists.
curl -s -o /dev/null -A 'GPTBot/1.2' "http://127.0.0.1:$port/x" || true
report+=("after one request|$(rss "$pid")")

python3 - "$port" "$CONNECTIONS" <<'EOF' &
import socket, sys, time
port, count = int(sys.argv[1]), int(sys.argv[2])
held = []
for i in range(count):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nUser-Agent: Mozilla/5.0 Firefox/128.0\r\n\r\n")
    held.append(s)
for s in held:
    s.settimeout(10)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk: break
        data += chunk
print("connections open", file=sys.stderr)
open("/tmp/crawlgate-memory-ready", "w").close()
time.sleep(30)
EOF
holder=$!
for _ in $(seq 1 600); do [ -f /tmp/crawlgate-memory-ready ] && break; sleep 0.1; done
rm -f /tmp/crawlgate-memory-ready
report+=("$CONNECTIONS keep-alive connections held|$(rss "$pid")")
kill "$holder" 2>/dev/null || true; wait "$holder" 2>/dev/null || true
kill "$pid"

read -r pid port < <(start "$work/large.yaml"); sleep 1
curl -s -o /dev/null -A 'Mozilla/5.0 (compatible; Googlebot/2.1)' "http://127.0.0.1:$port/banking/x" || true
report+=("one site, 512 KB robots.txt ($(grep -ci '^disallow' "$work/large.txt") rules)|$(rss "$pid")")
kill "$pid"

read -r pid port < <(start "$work/sites.yaml"); sleep 2
for i in 1 500 1000; do curl -s -o /dev/null -H "Host: s$i.test" -A 'GPTBot/1.2' "http://127.0.0.1:$port/x" || true; done
report+=("1,000 sites, small robots.txt each|$(rss "$pid")")
kill "$pid"

printf '%-48s %10s\n' "crawlgate" "RSS MiB"
for row in "${report[@]}"; do printf '%-48s %10s\n' "${row%%|*}" "${row##*|}"; done
