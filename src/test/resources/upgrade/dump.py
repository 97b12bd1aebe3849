"""Writes every key of a Redis as JSON lines (values base64), for UpgradeIT's fixture."""
import base64, json, socket, sys

class Resp:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.f = self.s.makefile("rb")

    def call(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.s.sendall(out)
        return self.read()

    def read(self):
        line = self.f.readline()[:-2]
        kind, rest = line[:1], line[1:]
        if kind in (b"+", b"-"):
            return rest
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.f.read(n + 2)[:-2]
            return data
        if kind == b"*":
            return [self.read() for _ in range(int(rest))]
        raise ValueError(line)

b64 = lambda b: base64.b64encode(b).decode()
r = Resp(int(sys.argv[1]))
keys = sorted(r.call("KEYS", "*"))
t = r.call("TIME")
print(json.dumps({"recordedAtMs": int(t[0]) * 1000 + int(t[1]) // 1000}))
for key in keys:
    kind = r.call("TYPE", key).decode()
    entry = {"key": b64(key), "type": kind, "pttl": r.call("PTTL", key)}
    if kind == "hash":
        v = r.call("HGETALL", key)
        entry["value"] = [[b64(v[i]), b64(v[i + 1])] for i in range(0, len(v), 2)]
    elif kind == "zset":
        v = r.call("ZRANGE", key, 0, -1, "WITHSCORES")
        entry["value"] = [[b64(v[i]), v[i + 1].decode()] for i in range(0, len(v), 2)]
    elif kind == "list":
        entry["value"] = [b64(x) for x in r.call("LRANGE", key, 0, -1)]
    elif kind == "set":
        entry["value"] = sorted(b64(x) for x in r.call("SMEMBERS", key))
    elif kind == "string":
        entry["value"] = b64(r.call("GET", key))
    else:
        raise ValueError(kind)
    print(json.dumps(entry, sort_keys=True))
