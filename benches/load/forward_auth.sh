#!/usr/bin/env bash
# Forward-auth under load: nginx at the edge proxying straight to the origin, against the same
# nginx asking crawlgate about every request first (conf/nginx/crawlgate-forward-auth.conf as
# shipped, crawlgate named by a keep-alive upstream), with the same request mix, in alternating
# rounds. Prints requests/s and p50/p99 latency per round, and crawlgate's count.
#
#   benches/load/forward_auth.sh                  # 3 rounds of 10 s, 64 connections
#   ROUNDS=5 DURATION=20 benches/load/forward_auth.sh
#   CRAWLGATE=/path/to/crawlgate benches/load/forward_auth.sh   # another build
#
# Needs nginx and wrk (Debian: apt-get install nginx-light wrk). Everything listens on loopback.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10}
CONNECTIONS=${CONNECTIONS:-64}
. benches/load/common.sh
for tool in nginx wrk python3; do
  command -v "$tool" >/dev/null 2>&1 || { echo "forward_auth.sh: needs $tool" >&2; exit 1; }
done
if [ -z "${CRAWLGATE:-}" ]; then
  echo "forward_auth.sh: building crawlgate (release)" >&2
  cargo build --release --quiet --bin crawlgate
  CRAWLGATE=target/release/crawlgate
fi

make_work forward-auth
ORIGIN=$(free_port); STRAIGHT=$(free_port); EDGE=$(free_port); AUTH=$(free_port); METRICS=$(free_port)
write_pages
cat > "$work/www/robots.txt" <<'EOF'
User-agent: GPTBot
User-agent: CCBot
Disallow: /

User-agent: *
Disallow: /private/
EOF
start_origin "$ORIGIN" 'location / { try_files $uri $uri.html /index.html; }'

snippet=$(sed "s/CRAWLGATE/crawlgate/; s/ORIGIN/origin/" conf/nginx/crawlgate-forward-auth.conf)
cat > "$work/nginx-edge.conf" <<EOF
worker_processes 1;
pid $work/nginx-edge.pid;
error_log $work/logs/edge-error.log;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 100000;
  upstream origin { server 127.0.0.1:$ORIGIN; keepalive 64; }
  upstream crawlgate { server 127.0.0.1:$AUTH; keepalive 64; }
  server {
    listen 127.0.0.1:$STRAIGHT;
    location / {
      proxy_pass http://origin;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
  server {
    listen 127.0.0.1:$EDGE;
$snippet
  }
}
EOF
$PIN_LOAD nginx -c "$work/nginx-edge.conf" -p "$work"

cat > "$work/crawlgate.yaml" <<EOF
listen: []
forward_auth: {listen: ["127.0.0.1:$AUTH"]}
trusted_proxies: [127.0.0.1/32]
metrics: {listen: "127.0.0.1:$METRICS"}
pingora: {threads: 1}
sites:
  - name: bench
    upstream: "127.0.0.1:$ORIGIN"
    robots: {origin: true}
    action: block
EOF
RUST_LOG=warn $PIN_PROXY "$CRAWLGATE" serve --config "$work/crawlgate.yaml" 2>"$work/logs/crawlgate.log" &
pids+=($!)
for port in $ORIGIN $STRAIGHT $EDGE $AUTH; do wait_port "$port"; done
sleep 1   # robots.txt fetched from the origin
write_mixes

results="$work/results.tsv"; : > "$results"
run() { # round name port
  $PIN_LOAD wrk -t1 -c"$CONNECTIONS" -d2s -s "$work/mixed.lua" "http://127.0.0.1:$3" >/dev/null 2>&1 || true
  local out; out=$($PIN_LOAD wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" --latency -s "$work/mixed.lua" "http://127.0.0.1:$3")
  printf '%s\t%s\t%s\n' "$1" "$2" "$(echo "$out" | tr '\n' '|')" >> "$results"
  echo "round $1: $2 done" >&2
}
for round in $(seq 1 "$ROUNDS"); do
  run "$round" "nginx->origin" "$STRAIGHT"
  run "$round" "nginx+crawlgate" "$EDGE"
done
curl -s "http://127.0.0.1:$METRICS/metrics" | grep '^crawlgate_requests_total' > "$work/metrics.txt" || true

python3 - "$results" "$work/metrics.txt" <<'EOF'
import re, sys
def ms(text):
    value, unit = re.match(r"([\d.]+)(us|ms|s)$", text).groups()
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]
print(f"{'round':>5} {'edge':<16} {'req/s':>9} {'p50 ms':>7} {'p99 ms':>7} {'non-2xx':>8}")
for line in open(sys.argv[1]):
    rnd, name, out = line.rstrip("\n").split("\t", 2)
    out = out.replace("|", "\n")
    total = int(re.search(r"(\d+) requests in", out).group(1))
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p50 = ms(re.search(r"^\s*50%\s+(\S+)", out, re.M).group(1))
    p99 = ms(re.search(r"^\s*99%\s+(\S+)", out, re.M).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    refused = int(errors.group(1)) if errors else 0
    print(f"{rnd:>5} {name:<16} {rps:>9.0f} {p50:>7.2f} {p99:>7.2f} {refused / total:>8.1%}")
print()
print("crawlgate's count (the refused crawlers are nginx's 403s):")
print(open(sys.argv[2]).read().strip() or "(no metrics)")
EOF
