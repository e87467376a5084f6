# acp-patch's compile and start-up check, run by the agent's interpreter (`python -I -B -c`).
# It reads one JSON document on stdin:
#   {"compile": [{"file", "text"}], "imports": [module, ...], "sys_path": [folder, ...],
#    "tree": folder, "timeout_s": n, "user_home": folder or null}
# compiles every text in memory (no bytecode written), then imports each module in a child
# forked from this process (each one the first import of a fresh start, so an import cycle
# shows whichever module the agent loads first), with no network (connections other than to
# loopback fail) and stdout captured (the agent's stdout is the protocol). It answers with
# one JSON document on the stdout it was given.
import json
import os
import sys

job = json.loads(sys.stdin.buffer.read().decode("utf-8"))
out_fd = os.dup(1)
devnull = os.open(os.devnull, os.O_RDWR)
os.dup2(devnull, 0)
os.dup2(devnull, 1)

import errno
import ipaddress
import select
import signal
import socket
import tempfile
import time
import traceback

def is_loopback(sock_family, address):
    if sock_family == getattr(socket, "AF_UNIX", None):
        return True
    host = address[0] if isinstance(address, tuple) else address
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if host is None or host == "localhost":
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False


def no_network():
    def guard(name, where):
        real = getattr(socket.socket, name)

        def guarded(self, *args):
            address = args[where] if where < len(args) else args[-1]
            if not is_loopback(self.family, address):
                raise OSError(errno.ENETUNREACH, "no network during acp-patch's start-up check: %r" % (address,))
            return real(self, *args)

        setattr(socket.socket, name, guarded)

    guard("connect", 0)
    guard("connect_ex", 0)
    guard("sendto", -1)
    real_getaddrinfo = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        if not is_loopback(None, host):
            raise socket.gaierror(socket.EAI_NONAME, "no network during acp-patch's start-up check: %r" % (host,))
        return real_getaddrinfo(host, *args, **kwargs)

    socket.getaddrinfo = getaddrinfo


def where(exc, tree):
    """The innermost place in the agent's tree, (file, line), the exception passed."""
    if isinstance(exc, SyntaxError) and exc.filename and exc.filename.startswith(tree):
        return exc.filename, exc.lineno or 1
    found = None
    tb = exc.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if name.startswith(tree):
            found = (name, tb.tb_lineno)
        tb = tb.tb_next
    return found


def seen(tree):
    """What this process read outside the copy: every module file, every folder on sys.path,
    [path, [mtime_ns, size] or None]; acp-patch keeps the answer while they are unchanged."""
    inside = os.path.realpath(tree) + os.sep
    paths = [getattr(m, "__file__", None) for m in list(sys.modules.values())]
    paths += sys.path
    out = {}
    for p in paths:
        if not isinstance(p, str) or not p:
            continue
        real = os.path.realpath(p)
        if (real + os.sep).startswith(inside) or real in out:
            continue
        try:
            st = os.stat(real)
            out[real] = [st.st_mtime_ns, st.st_size]
        except OSError:
            out[real] = None
    return [[p, s] for p, s in sorted(out.items())]


def start_child(module, tree):
    """Forks a child that imports `module` and writes what happened to a pipe."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            captured = tempfile.TemporaryFile()
            os.dup2(captured.fileno(), 1)
            result = {"error": None, "stdout": 0}
            try:
                __import__(module)
            except BaseException as e:
                line = traceback.format_exception_only(type(e), e)[-1].strip()
                result["error"] = line.replace(tree + os.sep, "")
                place = where(e, tree)
                if place:
                    result["file"] = os.path.relpath(place[0], tree)
                    result["line"] = place[1]
            try:
                sys.stdout.flush()
            except BaseException:
                pass
            result["stdout"] = os.fstat(1).st_size
            try:
                result["seen"] = seen(tree)
            except BaseException:
                result["seen"] = None
            data = json.dumps(result).encode("utf-8")
            while data:
                data = data[os.write(w, data):]
        finally:
            os._exit(0)
    os.close(w)
    return pid, r


def import_all(modules, tree, timeout_s):
    """Each module in its own child, as many at once as there are cores."""
    results = [None] * len(modules)
    waiting = list(range(len(modules)))
    running = {}  # read end -> (index, pid, deadline, data)
    at_once = max(1, min(os.cpu_count() or 1, 4))
    while waiting or running:
        while waiting and len(running) < at_once:
            i = waiting.pop(0)
            pid, r = start_child(modules[i], tree)
            running[r] = [i, pid, time.monotonic() + timeout_s, b""]
        now = time.monotonic()
        left = max(0.0, min(v[2] for v in running.values()) - now)
        ready, _, _ = select.select(list(running), [], [], left)
        for r in ready:
            chunk = os.read(r, 1 << 16)
            if chunk:
                running[r][3] += chunk
                continue
            i, pid, _, data = running.pop(r)
            os.close(r)
            os.waitpid(pid, 0)
            if data:
                results[i] = json.loads(data.decode("utf-8"))
            else:
                results[i] = {"error": "the interpreter died while importing it", "stdout": 0}
        now = time.monotonic()
        for r in [r for r, v in running.items() if v[2] <= now]:
            i, pid, _, _ = running.pop(r)
            os.close(r)
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
            os.waitpid(pid, 0)
            results[i] = {
                "error": "the import did not finish within %d s (it waits for something)" % timeout_s,
                "stdout": 0,
            }
    return results


def main():
    results = {"compile": [], "imports": [], "seen": []}
    for item in job["compile"]:
        try:
            compile(item["text"].encode("utf-8"), item["file"], "exec", dont_inherit=True)
            results["compile"].append(None)
        except SyntaxError as e:
            results["compile"].append({"line": e.lineno or 1, "message": "%s: %s" % (type(e).__name__, e.msg)})
        except (ValueError, MemoryError, RecursionError) as e:
            results["compile"].append({"line": 1, "message": "%s: %s" % (type(e).__name__, e)})
    if job["imports"]:
        no_network()
        sys.dont_write_bytecode = True
        sys.path[0:0] = job["sys_path"]
        # -I leaves out the user's site-packages (a `pip install --user`): put it back
        if job.get("user_home"):
            user_site = os.path.join(job["user_home"], ".local", "lib", "python%d.%d" % sys.version_info[:2], "site-packages")
            if os.path.isdir(user_site):
                sys.path.append(user_site)
        os.chdir(job["tree"])
        results["imports"] = import_all(job["imports"], job["tree"], job["timeout_s"])
        # an answer with a child that could not say what it read is never kept (null)
        merged = {}
        for r in results["imports"]:
            read = r.pop("seen", None)
            if read is None:
                merged = None
            elif merged is not None:
                merged.update((p, s) for p, s in read)
        results["seen"] = None if merged is None else [{"path": p, "stamp": s} for p, s in sorted(merged.items())]
    v = sys.version_info
    results["version"] = "%d.%d.%d" % (v[0], v[1], v[2])
    data = json.dumps(results).encode("utf-8")
    while data:
        data = data[os.write(out_fd, data):]


main()
