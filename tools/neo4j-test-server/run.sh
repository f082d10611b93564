#!/usr/bin/env bash
# Real Neo4j 5.26 LTS (Community, embedded, Bolt only on 127.0.0.1) for the test suite.
# No Docker: jars come from Maven Central into ~/.m2; needs java 17+ and mvn.
#
#   run.sh build                      compile + resolve classpath (no-op when up to date)
#   run.sh start [--same-port] [--fresh]
#                                     start in the background (or reuse a running one) and
#                                     print `export GATEWAY_TEST_NEO4J_*=...` lines on stdout:
#                                       eval "$(tools/neo4j-test-server/run.sh start)"
#   run.sh stop [--keep-data]         SIGTERM (SIGKILL after 30 s); deletes the data unless
#                                     --keep-data is given
#   run.sh restart                    = stop --keep-data + start --same-port
#   run.sh status                     exit 0 if running and Bolt accepts connections
#
# Data survives a restart: `stop --keep-data` leaves the store in place and `start` always
# opens whatever store the state dir holds (`--fresh` wipes it first); `--same-port` reuses the
# port recorded by the previous start, so the URI stays the same. A plain `stop` deletes the
# store. A store left by a crash or SIGKILL is reused (and recovered) by the next `start`.
#
# Only the export lines go to stdout; every other message goes to stderr.
#
# Environment:
#   NEO4J_TEST_STATE_DIR  state dir (default: <repo>/.neo4j-test) holding pid, uri, port,
#                         password, server.out (JVM output, appended) and work/ (store + tmp)
#   NEO4J_TEST_PASSWORD   password of user neo4j, >= 8 chars (default: test-password-123)
#   NEO4J_TEST_PORT       Bolt port (default: 0 = a free port)
#   NEO4J_TEST_START_TIMEOUT / NEO4J_TEST_STOP_TIMEOUT  seconds (default: 180 / 30)
#   NEO4J_TEST_JAVA_OPTS  extra JVM flags; JAVA_HOME selects the java binary
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
STATE_DIR=$(realpath -m "${NEO4J_TEST_STATE_DIR:-$REPO/.neo4j-test}")
WORK_DIR=$STATE_DIR/work
MAIN_CLASS=testserver.Neo4jTestServer
CLASS_FILE=$HERE/target/classes/testserver/Neo4jTestServer.class
CP_FILE=$HERE/target/cp.txt
SOURCES=("$HERE/pom.xml" "$HERE/src/main/java/testserver/Neo4jTestServer.java")
START_TIMEOUT=${NEO4J_TEST_START_TIMEOUT:-180}
STOP_TIMEOUT=${NEO4J_TEST_STOP_TIMEOUT:-30}
JAVA=${JAVA_HOME:+$JAVA_HOME/bin/}java

log() { echo "neo4j-test-server: $*" >&2; }
die() { log "$*"; exit 1; }

# ---------------------------------------------------------------- build

needs_build() {
    [[ -f $CLASS_FILE && -s $CP_FILE ]] || return 0
    local src jar
    for src in "${SOURCES[@]}"; do
        [[ $CLASS_FILE -nt $src && $CP_FILE -nt $src ]] || return 0
    done
    # The jars must still be in the local Maven repository.
    IFS=: read -r -a jars <"$CP_FILE"
    for jar in "${jars[@]}"; do
        [[ -f $jar ]] || return 0
    done
    return 1
}

build() {
    needs_build || return 0
    log "building (first run downloads Neo4j from Maven Central into ~/.m2)..."
    rm -f "$CP_FILE"
    # (Debian's Maven 3.8.7 prints stray ESC[0m codes even in batch mode: strip them.)
    mvn -q -B -f "$HERE/pom.xml" compile dependency:build-classpath 2>&1 </dev/null \
        | sed 's/\x1b\[[0-9;]*m//g' >&2 || die "maven build failed"
    [[ -f $CLASS_FILE && -s $CP_FILE ]] || die "build produced no $CLASS_FILE or $CP_FILE"
    touch "$CLASS_FILE" "$CP_FILE" # incremental compile may leave the class untouched
    log "build done"
}

# ---------------------------------------------------------------- process helpers

lock_state() {
    mkdir -p "$STATE_DIR"
    exec 9>"$STATE_DIR/.lock"
    flock -w $((START_TIMEOUT + STOP_TIMEOUT + 60)) 9 || die "could not lock $STATE_DIR/.lock"
}

alive() { # running and not a zombie
    local state
    state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
    [[ -n $state && $state != Z ]]
}

# pid of the server recorded in the state dir, if that process is alive and really ours.
server_pid() {
    local pid
    [[ -f $STATE_DIR/pid ]] || return 1
    pid=$(<"$STATE_DIR/pid")
    [[ $pid =~ ^[0-9]+$ ]] && alive "$pid" || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "-Dneo4j.home=$WORK_DIR/home " || return 1
    echo "$pid"
}

port_open() { timeout 3 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }

recorded_port() {
    local uri
    [[ -f $STATE_DIR/uri ]] || return 1
    uri=$(<"$STATE_DIR/uri")
    echo "${uri##*:}"
}

print_exports() {
    printf 'export GATEWAY_TEST_NEO4J_URI=%q\n' "$(<"$STATE_DIR/uri")"
    printf 'export GATEWAY_TEST_NEO4J_USER=neo4j\n'
    printf 'export GATEWAY_TEST_NEO4J_PASSWORD=%q\n' "$(<"$STATE_DIR/password")"
}

stop_server() { # $1 = 1 to keep the store
    local keep=$1 pid waited=0
    if pid=$(server_pid); then
        log "stopping pid $pid (SIGTERM)"
        kill -TERM "$pid" 2>/dev/null || true
        while server_pid >/dev/null && ((waited < STOP_TIMEOUT * 10)); do
            sleep 0.1
            waited=$((waited + 1))
        done
        if server_pid >/dev/null; then
            log "still running after ${STOP_TIMEOUT}s: SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
            for _ in $(seq 1 50); do server_pid >/dev/null || break; sleep 0.1; done
        fi
        log "stopped"
    elif [[ -f $STATE_DIR/pid ]]; then
        log "no running server (stale pid file removed)"
    else
        log "no running server"
    fi
    rm -f "$STATE_DIR/pid" "$STATE_DIR/uri"
    if [[ $keep == 1 ]]; then
        if [[ -d $WORK_DIR/home ]]; then log "kept data in $WORK_DIR/home"; fi
    else
        rm -rf "$WORK_DIR"
    fi
}

start_server() { # $1 = 1 for --same-port, $2 = 1 for --fresh
    local same_port=$1 fresh=$2 pid port password offset waited=0 uri

    if pid=$(server_pid); then
        port=$(recorded_port || true)
        if [[ -n $port ]] && port_open "$port"; then
            log "reusing running server pid $pid at $(<"$STATE_DIR/uri")"
            print_exports
            return 0
        fi
        log "pid $pid is alive but Bolt does not answer: stopping it (data kept)"
        stop_server 1
    elif [[ -f $STATE_DIR/pid ]]; then
        log "removing stale pid file (previous server died)"
        rm -f "$STATE_DIR/pid" "$STATE_DIR/uri"
    fi

    password=${NEO4J_TEST_PASSWORD:-test-password-123}
    ((${#password} >= 8)) || die "NEO4J_TEST_PASSWORD must have at least 8 characters"
    if [[ $same_port == 1 ]]; then
        [[ -s $STATE_DIR/port ]] || die "--same-port: no port recorded in $STATE_DIR/port"
        port=$(<"$STATE_DIR/port")
    else
        port=${NEO4J_TEST_PORT:-0}
    fi
    [[ $port =~ ^[0-9]+$ ]] || die "bad port '$port'"

    build
    [[ $fresh == 1 ]] && rm -rf "$WORK_DIR"
    mkdir -p "$WORK_DIR/home" "$WORK_DIR/tmp"
    [[ -d $WORK_DIR/home/data ]] && log "opening existing store in $WORK_DIR/home"

    local -a java_opts=(
        -Xms256m -Xmx1g -XX:+UseSerialGC -XX:+ExitOnOutOfMemoryError
        # The module opens that the stock Neo4j 5.26 neo4j.conf passes to the JVM.
        --add-opens=java.base/java.nio=ALL-UNNAMED
        --add-opens=java.base/java.io=ALL-UNNAMED
        --add-opens=java.base/sun.nio.ch=ALL-UNNAMED
        --add-opens=java.base/java.lang=ALL-UNNAMED
        --enable-native-access=ALL-UNNAMED
        -Dio.netty.tryReflectionSetAccessible=true
        -Dfile.encoding=UTF-8
        "-Djava.io.tmpdir=$WORK_DIR/tmp"
    )
    # shellcheck disable=SC2206 # word splitting of the user's extra flags is intended
    [[ -n ${NEO4J_TEST_JAVA_OPTS:-} ]] && java_opts+=($NEO4J_TEST_JAVA_OPTS)

    touch "$STATE_DIR/server.out"
    offset=$(stat -c %s "$STATE_DIR/server.out")
    echo "=== $(date -u +%FT%TZ) start port=$port ===" >>"$STATE_DIR/server.out"
    # setsid: own session, so a Ctrl-C aimed at the caller does not hit the server.
    # 9>&-: the JVM must not inherit (and hold) the state lock.
    setsid "$JAVA" "${java_opts[@]}" \
        "-Dneo4j.home=$WORK_DIR/home" "-Dneo4j.port=$port" "-Dneo4j.password=$password" \
        -cp "$HERE/target/classes:$(<"$CP_FILE")" "$MAIN_CLASS" \
        </dev/null >>"$STATE_DIR/server.out" 2>&1 9>&- &
    pid=$!
    echo "$pid" >"$STATE_DIR/pid"
    log "started pid $pid, waiting up to ${START_TIMEOUT}s for Bolt"

    while :; do
        uri=$(tail -c +"$((offset + 1))" "$STATE_DIR/server.out" | sed -n 's/^NEO4J_BOLT_URI=//p' | head -n 1)
        [[ -n $uri ]] && break
        if ! alive "$pid"; then
            rm -f "$STATE_DIR/pid"
            log "server exited before it was ready; last output:"
            tail -c +"$((offset + 1))" "$STATE_DIR/server.out" | tail -n 40 >&2
            exit 1
        fi
        if ((waited >= START_TIMEOUT * 10)); then
            log "not ready after ${START_TIMEOUT}s; last output:"
            tail -c +"$((offset + 1))" "$STATE_DIR/server.out" | tail -n 40 >&2
            stop_server 1
            exit 1
        fi
        sleep 0.1
        waited=$((waited + 1))
    done

    echo "$uri" >"$STATE_DIR/uri"
    echo "${uri##*:}" >"$STATE_DIR/port"
    (umask 077 && printf '%s\n' "$password" >"$STATE_DIR/password")
    log "ready after ~$((waited / 10))s at $uri (pid $pid, log: $STATE_DIR/server.out)"
    print_exports
}

# ---------------------------------------------------------------- commands

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; }

cmd=${1:-}
[[ $# -gt 0 ]] && shift
case $cmd in
build)
    mkdir -p "$HERE/target"
    exec 9>"$HERE/target/.build.lock"
    flock -w 900 9 || die "could not lock the build"
    build
    ;;
start)
    same_port=0 fresh=0
    for arg in "$@"; do
        case $arg in
        --same-port) same_port=1 ;;
        --fresh) fresh=1 ;;
        *) die "start: unknown option $arg" ;;
        esac
    done
    lock_state
    start_server "$same_port" "$fresh"
    ;;
stop)
    keep=0
    for arg in "$@"; do
        case $arg in
        --keep-data) keep=1 ;;
        *) die "stop: unknown option $arg" ;;
        esac
    done
    lock_state
    stop_server "$keep"
    ;;
restart)
    [[ $# -eq 0 ]] || die "restart takes no options"
    lock_state
    stop_server 1
    start_server 1 0
    ;;
status)
    if pid=$(server_pid); then
        port=$(recorded_port || true)
        if [[ -n $port ]] && port_open "$port"; then
            log "running: $(<"$STATE_DIR/uri") (pid $pid)"
            exit 0
        fi
        log "pid $pid is alive but Bolt is not answering (yet)"
        exit 1
    fi
    log "not running"
    exit 1
    ;;
-h | --help | help) usage ;;
*)
    usage
    exit 2
    ;;
esac
