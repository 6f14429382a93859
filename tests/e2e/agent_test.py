# SPDX-License-Identifier: MIT
# agent_test.py NAME PYTHON -- the agent in real training processes, recorded
# by trainparity-run with a real daemon: event counts against the scripts'
# own counts (steps, backward, zero_grad per kind), bit-identical training,
# DataLoader workers (fork and spawn), an unreachable daemon, a script that
# raises and one that is killed.  PYTHON
# names the interpreter (torch 2.13 in the venv, or Debian's torch 1.13).
import json
import os
import subprocess
import sys

from tpdb import Workdir

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIX = os.path.join(ROOT, "fixtures", "record")


def fixture(name):
    return os.path.join(FIX, name)


def trainer(w):
    """The process that trained: the one with the most events."""
    procs = w.processes()
    assert procs, "no process was recorded"
    return max(procs, key=lambda p: p["nevents"])


def complete(p):
    assert p["bye"] == "exit", p
    assert p["sent"] == p["nevents"] and p["dropped"] == 0 and p["errors"] == 0, p


def last_json(out):
    return json.loads([l for l in out.splitlines() if l.startswith("{")][-1])


def test_counts(py):
    """Optimizer and scheduler steps, backward calls: as the script counts them."""
    w = Workdir()
    r = w.run("record", "--", py, fixture("optimizers.py"))
    assert r.returncode == 0, r.stderr
    want = last_json(r.stdout)
    p = trainer(w)
    complete(p)
    steps = [e for e in w.events(p["pid"], "step") if e["body"]["phase"] == "pre"]
    assert len(steps) == want["optimizer_steps"], (len(steps), want)
    assert len(w.events(p["pid"], "backward")) == want["backward"]
    assert len(w.events(p["pid"], "sched")) == want["scheduler_steps"]
    classes = {e["body"]["cls"] for e in steps}
    assert {"SGD", "Adam", "AdamW", "ClippedSGD"} <= classes, classes
    plateau = [e for e in w.events(p["pid"], "sched") if e["body"]["cls"] == "ReduceLROnPlateau"]
    assert plateau and all(e["body"]["metric"] is not None for e in plateau)
    snaps = w.events(p["pid"], "snapshot")
    assert sum(1 for s in snaps if s["body"]["why"] == "backward") == want["backward"]
    assert snaps[-1]["body"]["why"] == "final"


def test_mlp(py):
    """The spine's fixture: every optimizer step in the step table, with loss and lr."""
    w = Workdir()
    r = w.run("record", "--", py, fixture("mlp.py"))
    assert r.returncode == 0, r.stderr
    table = [l.split() for l in r.stdout.splitlines() if l.strip()[:1].isdigit()]
    assert len(table) == 8, r.stdout
    p = trainer(w)
    complete(p)
    saves, loads = w.events(p["pid"], "save"), w.events(p["pid"], "load")
    assert len(saves) == 1 and len(loads) == 1
    assert saves[0]["body"]["digest"] == loads[0]["body"]["digest"]
    assert w.events(p["pid"], "restore")[-1]["body"]["what"] == "module"


def test_capture_window(py):
    """accum's setting: every tensor digested and its values shipped at steps
    0 to 2 only (TRAINPARITY_CAPTURE_UNTIL, TRAINPARITY_FULL_STEPS), light
    snapshots and digests alone after them."""
    w = Workdir()
    # (set by the command itself: trainparity-run removes a check variable
    # from the environment the command inherits)
    r = w.run("record", "--capture", "values", "--digest", "induction", "--", "env",
              "TRAINPARITY_CAPTURE_UNTIL=2", "TRAINPARITY_FULL_STEPS=0-2", py, fixture("mlp.py"))
    assert r.returncode == 0, r.stderr
    p = trainer(w)
    complete(p)
    tensors = lambda leaves: [l for l in leaves if l[0] == "t"]
    steps = [e for e in w.events(p["pid"], "step") if e["body"]["phase"] == "pre"]
    assert len(steps) == 8, len(steps)
    for e in steps:
        grads = tensors(e["body"]["grads"])
        assert grads and all(g[-1] is (e["step"] <= 2) for g in grads), (e["step"], grads)
    snaps = [e for e in w.events(p["pid"], "snapshot") if e["body"]["why"] == "backward"]
    assert [e["step"] for e in snaps] == list(range(8)), [e["step"] for e in snaps]
    for e in snaps:
        model = [l for l in tensors(e["body"]["leaves"]) if l[1].startswith("model.")]
        if e["step"] <= 2:
            assert model and all(l[-1] is True for l in model), (e["step"], model)
        else:
            assert e["body"]["full"] is False and not model, (e["step"], e["body"])


def test_update_norm(py):
    """health's update norms (agent/update.c): each step's `unorm` and
    `changed` as the script computes them from copies it takes itself, on a
    tensor larger than one of the agent's pieces and a float64 one, with a
    step that moves nothing; and the same bits on one thread as on two."""
    runs = []
    for threads in ("1", "2"):
        w = Workdir()
        r = w.run("health", "--", py, fixture("update.py"),
                  env={"TRAINPARITY_HASH_THREADS": threads})
        # FAIL: step 3 moved no parameter (the verdict of docs/health.md)
        assert r.returncode == 1 and "no parameter changed" in r.stdout, (r.stdout, r.stderr)
        want = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{\"step\"")]
        assert len(want) == 6 and not want[3]["changed"], want
        p = trainer(w)
        complete(p)
        post = [e["body"] for e in w.events(p["pid"], "step") if e["body"]["phase"] == "post"]
        assert len(post) == 6, post
        for b, t in zip(post, want):
            assert b["changed"] is t["changed"], (b, t)
            assert abs(b["unorm"] - t["norm"]) <= 1e-9 * t["norm"], (b, t)
        runs.append([b["unorm"] for b in post])
    assert runs[0] == runs[1], runs


def plain_output(py, script, *args):
    r = subprocess.run([py, fixture(script), *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_bit_identity(py):
    """Losses and final weights are bit for bit those of a run without the agent."""
    w = Workdir()
    r = w.run("record", "--", py, fixture("bitid.py"))
    assert r.returncode == 0, r.stderr
    recorded = [l for l in r.stdout.splitlines() if l.startswith(("loss ", "weights "))]
    plain = [l for l in plain_output(py, "bitid.py").splitlines()]
    assert recorded == plain, "the agent changed the training"
    complete(trainer(w))


def test_warnings_keep_their_line(py):
    """A warning torch raises through a wrapped call names the same line as
    without the agent (the user's, for a stacklevel that points there)."""
    w = Workdir()
    r = w.run("record", "--", py, fixture("warns.py"))
    assert r.returncode == 0, r.stderr
    recorded = [l for l in r.stdout.splitlines() if l.startswith("warning ")]
    plain = [l for l in plain_output(py, "warns.py").splitlines() if l.startswith("warning ")]
    assert plain, "the fixture raised no warning"
    assert recorded == plain, (recorded, plain)


def dataloader(py, method):
    w = Workdir()
    r = w.run("record", "--", py, fixture("dataloader.py"), method, timeout=300)
    assert r.returncode == 0, r.stderr
    want = last_json(r.stdout)
    p = trainer(w)
    complete(p)
    events = w.events(p["pid"], "batch")
    batches = [b for b in events if not b["body"].get("end")]
    ends = [b for b in events if b["body"].get("end")]
    assert len(batches) == want["batches"], (len(batches), want)
    # each epoch's iterator ran out once: one end mark, after its batches
    assert [(b["body"]["epoch"], b["body"]["pos"], b["body"]["ids"]) for b in ends] == \
        [(0, 5, None), (1, 5, None)], ends
    assert all(b["body"]["worker"] in (0, 1) for b in batches), batches[0]
    assert all(len(b["body"]["ids"]) == b["body"]["size"] for b in batches)
    epoch0 = sorted(i for b in batches if b["body"]["epoch"] == 0 for i in b["body"]["ids"])
    assert epoch0 == list(range(40)), epoch0
    return w, p


def test_dataloader_fork(py):
    """Forked workers: no hang, every batch seen with its sampler ids and worker."""
    w, p = dataloader(py, "fork")
    assert len(w.processes()) == 1, "a forked worker talked to the daemon"


def test_dataloader_spawn(py):
    """Spawned workers boot their own agent and name their parent."""
    w, p = dataloader(py, "spawn")
    workers = [q for q in w.processes() if q["pid"] != p["pid"]]
    assert workers, "the spawned workers did not report"
    for q in workers:
        assert q["role"] == "spawned" and q["ppid"] == p["pid"], q
        complete(q)


def test_daemon_down(py):
    """Daemon unreachable from the start: the run completes, the spool is ingested."""
    w = Workdir()
    r = w.run("record", "--", "env", "TRAINPARITY_DAEMON=ipc:///nonexistent/tp.ipc",
              "TRAINPARITY_SEND_TIMEOUT_MS=200", py, fixture("optimizers.py"))
    assert r.returncode == 0, r.stderr
    want = last_json(r.stdout)
    p = trainer(w)
    complete(p)
    steps = [e for e in w.events(p["pid"], "step") if e["body"]["phase"] == "pre"]
    assert len(steps) == want["optimizer_steps"]
    assert w.events(p["pid"], "bye")[0]["body"]["spooled"] is True
    done = os.listdir(os.path.join(w.dir, ".trainparity", "spool", "done"))
    assert done, "no spool file was ingested"


def test_raises(py):
    """A script that raises: its status, the exception, the steps before it."""
    w = Workdir()
    r = w.run("record", "--", py, fixture("raises.py"))
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "RuntimeError" in r.stderr
    p = trainer(w)
    assert p["bye"] == "exception" and p["exc"] == "RuntimeError", p
    assert w.execution(p["exec"])[0] == 1
    assert len([e for e in w.events(p["pid"], "step") if e["body"]["phase"] == "pre"]) == 2


def leaves_of(w, p):
    """Every snapshot and gradient leaf of process p, in order."""
    out = []
    for e in w.events(p["pid"]):
        b = e["body"]
        for leaf in b.get("leaves", []) + b.get("grads", []):
            out.append((e["kind"], e["step"], leaf[1], leaf[2:]))
        if "gnorm" in b:
            out.append((e["kind"], e["step"], "gnorm", b["gnorm"]))
    return out


def closure_run(py, mode):
    """closures.py under the agent: its output (bit identity with a run
    without the agent checked), its trainer process and its step events."""
    w = Workdir()
    r = w.run("record", "--", py, fixture("closures.py"), mode)
    assert r.returncode == 0, r.stderr
    out = [l for l in r.stdout.splitlines() if l.startswith(("loss ", "weights ", "lbfgs_gnorm "))]
    plain = [l for l in plain_output(py, "closures.py", mode).splitlines() if not l.startswith("{")]
    assert out == plain, "the agent changed the training"
    p = trainer(w)
    complete(p)
    return out, last_json(r.stdout), w, p


def test_closures(py):
    """optimizer.step(closure) (Lightning, LBFGS): the step's gradients are
    those its closure computed, not the previous step's; the events come in
    the order backward, step pre, step post; training is unchanged."""
    c_out, want, cw, cp = closure_run(py, "closure")
    p_out, _, pw, pp = closure_run(py, "plain")
    assert c_out == p_out, "a closure changed the training itself"

    def pres(w, p):
        return [e for e in w.events(p["pid"], "step") if e["body"]["phase"] == "pre"]

    cpre, ppre = pres(cw, cp), pres(pw, pp)
    assert len(cpre) == len(ppre) == want["steps"], (len(cpre), len(ppre), want)
    for c, q in zip(cpre, ppre):
        assert c["step"] == q["step"] and c["body"]["ngrads"] == q["body"]["ngrads"] > 0, (c, q)
        assert c["body"]["grads"] == q["body"]["grads"], "step %d: grads differ" % c["step"]
        assert c["body"]["gnorm"] == q["body"]["gnorm"], (c["body"]["gnorm"], q["body"]["gnorm"])
    # SGD and Adam: one backward, then pre, then post, step after step
    n = want["steps"] - want["lbfgs_steps"]
    kinds = [(e["kind"], e["body"].get("phase")) for e in cw.events(cp["pid"])
             if e["kind"] in ("backward", "step")]
    assert kinds[:3 * n] == [("backward", None), ("step", "pre"), ("step", "post")] * n, kinds
    # LBFGS calls its closure several times a step: the first call's
    # gradients are the step's, and only that call emits
    norms = [float(l.split()[1]) for l in c_out if l.startswith("lbfgs_gnorm ")]
    lb = [e["body"] for e in cpre if e["body"]["cls"] == "LBFGS"]
    assert len(lb) == len(norms) == want["lbfgs_steps"], (lb, norms)
    for b, g in zip(lb, norms):
        assert abs(b["gnorm"] - g) <= 1e-5 * g, (b["gnorm"], g)
    bwd = [e["step"] for e in cw.events(cp["pid"], "backward")]
    assert len(bwd) > want["steps"], "LBFGS called its closure once a step: nothing tested"



def test_zero_grad(py):
    """Every zero_grad call reported once, as the script counts them per kind
    (plain, set_to_none given, an override calling super() or not,
    Module.zero_grad, an accelerate-style wrapper delegating, silent while it
    accumulates), with which, opt and set_to_none right and in order with
    backward and step; training unchanged."""
    w = Workdir()
    r = w.run("record", "--", py, fixture("zero_grad.py"))
    assert r.returncode == 0, r.stderr
    want = last_json(r.stdout)
    out = [l for l in r.stdout.splitlines() if l.startswith(("loss ", "weights "))]
    plain = [l for l in plain_output(py, "zero_grad.py").splitlines() if not l.startswith("{")]
    assert out == plain, "the agent changed the training"
    p = trainer(w)
    complete(p)
    got = []
    for e in w.events(p["pid"]):
        b = e["body"]
        if e["kind"] == "zero_grad":
            assert b["which"] in ("optimizer", "module"), b
            assert ("opt" in b) == (b["which"] == "optimizer"), b
            got.append(["zero_grad", b["which"], b.get("opt"), b["set_to_none"]])
        elif e["kind"] == "backward":
            got.append(["backward"])
        elif e["kind"] == "step" and b["phase"] == "pre":
            got.append(["step", b["opt"]])
    trace = want["trace"]
    kinds = [t[4] for t in trace if t[0] == "zero_grad"]
    for kind, n in want["counts"].items():
        assert n > 0, kind
        if kind.endswith("_accumulating"):
            continue
        assert kinds.count(kind) == n, (kind, kinds.count(kind), n)
    expect = [t[:4] for t in trace]
    zg = [g for g in got if g[0] == "zero_grad"]
    assert len(zg) == len(kinds), "%d zero_grad events, the script reported %d calls" % (
        len(zg), len(kinds))
    for g, t in zip(zg, (t for t in trace if t[0] == "zero_grad")):
        assert g == t[:4], "%s: recorded %s, want %s" % (t[4], g, t[:4])
    for i, (g, t) in enumerate(zip(got, expect)):
        assert g == t, "event %d: recorded %s, want %s (%s)" % (i, g, t, got[max(0, i - 3):i + 3])
    assert len(got) == len(expect), (len(got), len(expect))

def test_attention_dropout(py):
    """--disable-dropout (TRAINPARITY_DISABLE_DROPOUT=1) reaches fused
    attention: scaled_dot_product_attention(dropout_p=...) and
    nn.MultiheadAttention compute as without dropout; without it they draw."""
    got = {}
    for env in ((), ("TRAINPARITY_DISABLE_DROPOUT=1",)):
        w = Workdir()
        r = w.run("record", "--", "env", *env, py, fixture("attention_dropout.py"))
        assert r.returncode == 0, r.stderr
        complete(trainer(w))
        got[bool(env)] = last_json(r.stdout)
    assert "mha" in got[True], got
    assert all(got[True].values()), got
    assert not any(got[False].values()), got


def test_wrapped_sampler(py):
    """A batch sampler wrapping another (accelerate's prepared loaders): the
    sampler reported is the one that orders the samples, not the
    DataLoader's unused SequentialSampler; total_size is that sampler's."""
    w = Workdir()
    r = w.run("record", "--", py, fixture("wrapped_sampler.py"))
    assert r.returncode == 0, r.stderr
    want = last_json(r.stdout)["loaders"]
    p = trainer(w)
    complete(p)
    got = {}
    for e in w.events(p["pid"], "batch"):
        b = e["body"]
        got.setdefault(b["loader"], set()).add((b["sampler"], b["total_size"]))
    assert sorted(got) == list(range(len(want))), got
    for i, (name, total) in enumerate(want):
        assert got[i] == {(name, total)}, (i, got[i], name, total)


def test_parallel_equals_serial(py):
    """Digests hashed on an OpenMP team of two equal those hashed on the
    training thread alone, event for event.  torch computes on one thread
    (OMP_NUM_THREADS=1) and the agent is told its team's size: on two
    threads torch's own results vary from run to run on a busy machine
    (2 of 60 runs of large.py without the agent took other losses from
    step 1 on; 0 of 60 on one thread), which would make two runs differ
    for a reason that is not the hashing."""
    runs = []
    for threads in (2, 1):
        w = Workdir()
        r = w.run("record", "--", "env", "OMP_NUM_THREADS=1",
                  "TRAINPARITY_HASH_THREADS=%d" % threads, py, fixture("large.py"))
        assert r.returncode == 0, r.stderr
        p = trainer(w)
        complete(p)
        hello = w.events(p["pid"], "hello")[0]["body"]
        assert hello["hash_threads"] == threads, hello
        leaves = leaves_of(w, p)
        strided = [l[3] for l in leaves if l[2] == "model.strided"]
        contiguous = [l[3] for l in leaves if l[2] == "model.contiguous"]
        assert strided and strided == contiguous, "a strided tensor's copy was hashed wrong"
        runs.append(leaves)
    assert len(runs[0]) > 20 and runs[0] == runs[1], "parallel hashing changed a digest"


def test_pickle_is_not_a_checkpoint(py):
    """A tensor through plain pickle is not a checkpoint; torch.save is."""
    w = Workdir()
    r = w.run("record", "--", py, fixture("pickled.py"))
    assert r.returncode == 0, r.stderr
    want = last_json(r.stdout)
    p = trainer(w)
    complete(p)
    assert len(w.events(p["pid"], "save")) == want["saves"], w.events(p["pid"], "save")
    assert len(w.events(p["pid"], "load")) == want["loads"], w.events(p["pid"], "load")


def test_aside(py):
    """The agent standing aside (agent/glue/core.py, S.aside: the "without"
    arm of bench/agent_step.py) observes none of those steps,
    and observing again it numbers the steps on: the events stored are
    exactly the "with" arm's, each step once, numbered without a gap."""
    w = Workdir()
    script = os.path.join(ROOT, "bench", "agent_step.py")
    r = w.run("record", "--", py, script, "tiny", "2", "2")
    assert r.returncode == 0, r.stderr  # agent_step checks the agent's own count
    p = trainer(w)
    complete(p)
    observed = last_json(r.stdout)["with_steps"]
    steps = [e["step"] for e in w.events(p["pid"], "step") if e["body"]["phase"] == "pre"]
    assert steps == list(range(observed)), (steps, observed)
    assert len(w.events(p["pid"], "backward")) == observed


CUDA_INERT = """
import torch
torch.manual_seed(0)
m = torch.nn.Linear(8, 4)
o = torch.optim.Adam(m.parameters())
for _ in range(3):
    o.zero_grad()
    m(torch.randn(16, 8)).pow(2).mean().backward()
    o.step()
objs = {l.split()[-1].rsplit("/", 1)[-1] for l in open("/proc/self/maps") if "/" in l}
print("agent", "libtpagent.so" in objs)
print("agent_cuda", any(o.startswith("libtpagent_cuda") for o in objs))
print("cudart", any(o.startswith("libcudart") for o in objs))
print("torch_cuda", torch.version.cuda is not None)
"""


def test_cuda_inert(py):
    """A process that never puts a tensor on a GPU never loads
    libtpagent_cuda.so (docs/gpu.md), nor, through it, a CUDA runtime."""
    w = Workdir()
    r = w.run("record", "--", py, "-c", CUDA_INERT)
    assert r.returncode == 0, r.stderr
    seen = dict(l.split() for l in r.stdout.splitlines() if len(l.split()) == 2)
    assert seen.get("agent") == "True", r.stdout  # the agent was there, observing
    assert seen.get("agent_cuda") == "False", r.stdout
    if seen.get("torch_cuda") == "False":  # a CPU torch loads no runtime itself
        assert seen.get("cudart") == "False", r.stdout
    p = trainer(w)
    complete(p)
    assert len([e for e in w.events(p["pid"], "step") if e["body"]["phase"] == "pre"]) == 3


def test_killed(py):
    """A script killed by SIGKILL: recorded as killed, its events up to then kept."""
    w = Workdir()
    r = w.run("record", "--", py, fixture("killed.py"))
    assert r.returncode == 137, (r.returncode, r.stderr)
    p = trainer(w)
    assert p["bye"] is None, "a killed process cannot have said bye"
    assert w.execution(p["exec"])[1] == 9
    assert len([e for e in w.events(p["pid"], "step") if e["body"]["phase"] == "pre"]) == 2
    q = w.run("record", "--", py, fixture("mlp.py"))
    assert q.returncode == 0, "the daemon stopped serving after a killed run"


if __name__ == "__main__":
    name, py = sys.argv[1], sys.argv[2]
    if not os.access(py, os.X_OK):
        print("SKIP: %s is not installed" % py)
        sys.exit(77)
    globals()["test_" + name](py)
    print("ok", name, py)
