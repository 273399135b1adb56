"""Checks the traces `cuoverlap record` wrote for torch_ddp_job.py under torchrun (issue 10).

Usage: check_job_trace.py merged FILE     one file holding every traced process
       check_job_trace.py per_rank DIR    DIR/ddp-0.sqlite and DIR/ddp-1.sqlite (-o 'ddp-%r.sqlite')
Prints what it found; exits 1 with the failed checks.
"""
import sqlite3
import sys

NCCL_KERNELS = ("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s "
                "ON s.id = k.shortName WHERE s.value LIKE 'nccl%' {}")
failures = []


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what)
    if not condition:
        failures.append(what)


def processes(db):
    rows = db.execute("SELECT pid, key, value FROM CUOVERLAP_PROCESS_SESSION").fetchall()
    by_pid = {}
    for pid, key, value in rows:
        by_pid.setdefault(pid, {})[key] = value
    return by_pid


def kernels_of(db, pid, extra=""):
    # globalPid carries the pid in bits 24..47 (Nsight Systems' encoding).
    return db.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s "
                      "ON s.id = k.shortName WHERE (k.globalPid >> 24) = ? " + extra,
                      (pid,)).fetchone()[0]


def check_merged(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    session = dict(db.execute("SELECT key, value FROM CUOVERLAP_SESSION"))
    check(session.get("complete") == "1", "every process's session ended cleanly")
    check(session.get("dropped_records") == "0", "no dropped records")
    procs = processes(db)
    for pid, p in sorted(procs.items()):
        print(f"  pid {pid} rank {p.get('rank')} ppid {p.get('ppid')}: {p.get('command', '')[:100]}"
              f" kernels {kernels_of(db, pid)}")
    for rank in ("0", "1"):
        ranked = [pid for pid, p in procs.items() if p.get("rank") == rank]
        trainers = [pid for pid in ranked if "torch_ddp_job.py" in procs[pid].get("command", "")
                    and "spawn_main" not in procs[pid].get("command", "")]
        check(len(trainers) == 1, f"rank {rank}: one training process")
        if trainers:
            check(kernels_of(db, trainers[0], "AND s.value LIKE 'nccl%'") > 0,
                  f"rank {rank}: NCCL kernels")
        workers = [pid for pid in ranked if pid not in trainers]
        check(len(workers) >= 2, f"rank {rank}: its DataLoader workers traced ({len(workers)})")
        check(all(kernels_of(db, pid) > 0 for pid in workers), f"rank {rank}: workers' kernels")
    check(db.execute("SELECT count(*) - count(DISTINCT value) FROM StringIds").fetchone()[0] == 0,
          "StringIds unique")


def check_per_rank(directory):
    for rank in (0, 1):
        path = f"{directory}/ddp-{rank}.sqlite"
        try:
            db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            session = dict(db.execute("SELECT key, value FROM CUOVERLAP_SESSION"))
        except sqlite3.Error as error:
            check(False, f"{path} readable ({error})")
            continue
        check(session.get("rank") == str(rank), f"{path}: rank {rank}")
        check(session.get("world_size") == "2", f"{path}: world size 2")
        check(db.execute(NCCL_KERNELS.format("")).fetchone()[0] > 0, f"{path}: NCCL kernels")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("merged", "per_rank"):
        sys.exit(__doc__)
    (check_merged if sys.argv[1] == "merged" else check_per_rank)(sys.argv[2])
    sys.exit(1 if failures else 0)
