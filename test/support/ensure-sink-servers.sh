#!/usr/bin/env bash
# The sink tests write to the MariaDB, Redis, NATS and RabbitMQ servers of this machine, on loopback: start each one
# that is installed but not listening, and wait for it. A server that is not installed is reported.
set -euo pipefail

listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_for() {
  local name=$1 port=$2
  for _ in $(seq 1 60); do
    listening "$port" && return 0
    sleep 0.5
  done
  echo "$name did not start listening on 127.0.0.1:$port" >&2
  exit 1
}

if ! listening 3306; then
  if [ -x /usr/sbin/mariadbd ]; then
    start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
    wait_for MariaDB 3306
  else
    echo "MariaDB is not listening on 127.0.0.1:3306 and not installed (apt-get install mariadb-server)" >&2
    exit 1
  fi
fi

if ! listening 6379; then
  if command -v redis-server >/dev/null; then
    mkdir -p /var/lib/redis /var/log/redis
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
      --dir /var/lib/redis --logfile /var/log/redis/ci.log
    wait_for Redis 6379
  else
    echo "Redis is not listening on 127.0.0.1:6379 and not installed (apt-get install redis-server)" >&2
    exit 1
  fi
fi

if ! listening 4222; then
  if [ -x /usr/sbin/nats-server ]; then
    mkdir -p /var/lib/nats-server
    start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- \
      -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log
    wait_for NATS 4222
  else
    echo "NATS is not listening on 127.0.0.1:4222 and not installed (apt-get install nats-server)" >&2
    exit 1
  fi
fi

if ! listening 5672; then
  if command -v rabbitmq-server >/dev/null; then
    rabbitmq-server -detached
    # RabbitMQ takes several seconds to boot.
    for _ in $(seq 1 120); do
      listening 5672 && break
      sleep 0.5
    done
    wait_for RabbitMQ 5672
  else
    echo "RabbitMQ is not listening on 127.0.0.1:5672 and not installed (apt-get install rabbitmq-server)" >&2
    exit 1
  fi
fi
