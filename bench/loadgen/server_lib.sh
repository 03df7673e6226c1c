# Starting and stopping the real server for the service benchmarks; sourced
# by bench/loadgen/run.sh and bench/loadgen/compiled_run.sh, which set REPO,
# VENV, BUILD, PY, THREADS and work (a scratch folder) first.
#
# Provides: port (a free TCP port), start_server FLAGS... (the server on
# fresh ports GRPC and HTTP with FLAGS and --threads=$THREADS, waiting until
# it is ready), stop_server, BIG (the 28M Llama's folder), and the default
# model flags split into encoder_flags and stories_flags.
server=""
stop_server() { if [[ -n "$server" ]]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi; server=""; }
port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
mapfile -t defaults < <("$REPO/tools/default_model_flags.sh" "$REPO" "$VENV")
encoder_flags=(); stories_flags=()
for f in "${defaults[@]}"; do
  case "$f" in --encoder-model=*) encoder_flags+=("$f") ;; *) stories_flags+=("$f") ;; esac
done
BIG="$REPO/.cache/bench/loadgen-llama28m"

start_server() {  # start_server FLAGS...
  GRPC=$(port); HTTP=$(port)
  "$REPO/dev" exec "$BUILD/attnserve" --listen-address=127.0.0.1 --grpc-port="$GRPC" --http-port="$HTTP" \
    "$@" --threads="$THREADS" >"$work/server.log" 2>&1 &
  server=$!
  for _ in $(seq 300); do curl -sf "http://127.0.0.1:$HTTP/readyz" >/dev/null 2>&1 && return 0; sleep 0.2; done
  cat "$work/server.log" >&2; return 1
}
