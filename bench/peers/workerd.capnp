# workerd config of bench/peers: one worker with two SQLite-backed Durable Object classes stored
# on local disk. Started as
#   workerd serve workerd.capnp --directory-path do-storage=DIR --socket-addr http=127.0.0.1:PORT
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "main", worker = .mainWorker),
    (name = "do-storage", disk = (writable = true)),
  ],
  sockets = [(name = "http", address = "127.0.0.1:8787", http = (), service = "main")],
);

const mainWorker :Workerd.Worker = (
  compatibilityDate = "2025-09-01",
  modules = [(name = "worker", esModule = embed "workerd-worker.js")],
  durableObjectNamespaces = [
    (className = "Counter", uniqueKey = "keepwork-bench-counter", enableSql = true),
    (className = "Reminder", uniqueKey = "keepwork-bench-reminder", enableSql = true),
  ],
  durableObjectStorage = (localDisk = "do-storage"),
  bindings = [
    (name = "COUNTER", durableObjectNamespace = "Counter"),
    (name = "REMINDER", durableObjectNamespace = "Reminder"),
  ],
);
