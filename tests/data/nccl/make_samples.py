"""Write the CONSTRUCTED nccl-tests samples in this directory (see README.md).

No GPU exists on the machines mpibench is developed on, so these files are not captures. They
reproduce the printf formats of nccl-tests' src/util.cu (writeDeviceReport,
writeResultHeader, writeBenchmarkLinePreamble/Body, writeResultFooter, JSON version 2) with
numbers from a simple latency + bandwidth model. Run: python make_samples.py
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent


def fstr(value: float, width: int) -> str:
    """nccl-tests getFloatStr: as many decimals as the column width allows."""
    power, val = 0, 1
    while value >= val:
        power += 1
        val *= 10
    if power < width - 2:
        return f"{value:{width}.2f}"
    if power < width - 1:
        return f"{value:{width}.1f}"
    if power < width + 1:
        return f"{value:{width}.0f}"
    return f"{value:{width}.1e}"


def model(size: int, nranks: int, wobble: float) -> tuple[float, float, float]:
    """(time us, algbw GB/s, busbw GB/s) for an 8-GPU NVLink all_reduce-like curve."""
    t = (11.5 + 0.8 * (size >> 20) ** 0.5) * wobble + size / (118.0 * 1e3)
    algbw = size / t / 1e3
    return t, algbw, algbw * 2 * (nranks - 1) / nranks


def sizes(lo: int, hi: int) -> list[int]:
    out, s = [], lo
    while s <= hi:
        out.append(s)
        s *= 2
    return out


def modern_text() -> tuple[str, list[dict]]:
    n = 8
    lines = [
        "# nccl-tests version 2.13.10 nccl-headers=21903 nccl-library=21903",
        "# Collective test starting: all_reduce_perf",
        "# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 "
        "iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0",
        "#",
        "# Using devices",
    ]
    for r in range(n):
        lines.append(f"#  Rank {r:2d} Group {0:2d} Pid {41230 + r:6d} on {'gpu-node07':>10s} "
                     f"device {r:2d} [{0:04x}:{[7, 15, 71, 78, 135, 143, 183, 190][r]:02x}:{0:02x}]"
                     " NVIDIA A100-SXM4-80GB")
    lines += [
        "#",
        f"# {'':>10s}  {'':>12s}  {'':>8s}  {'':>6s}  {'':>6s}           out-of-place"
        "                       in-place          ",
        f"# {'size':>10s}  {'count':>12s}  {'type':>8s}  {'redop':>6s}  {'root':>6s}  "
        f"{'time':>7s}  {'algbw':>6s}  {'busbw':>6s}  {'#wrong':>6s}  {'time':>7s}  "
        f"{'algbw':>6s}  {'busbw':>6s}  {'#wrong':>6s} ",
        f"# {'(B)':>10s}  {'(elements)':>12s}  {'':>8s}  {'':>6s}  {'':>6s}  {'(us)':>7s}  "
        f"{'(GB/s)':>6s}  {'(GB/s)':>6s}  {'':>6s}  {'(us)':>7s}  {'(GB/s)':>6s}  "
        f"{'(GB/s)':>6s}  {'':>6s} ",
    ]
    rows = []
    bus_sum = 0.0
    for k, size in enumerate(sizes(8, 128 << 20)):
        oop = model(size, n, 1.0 + 0.03 * ((k * 7) % 5) / 4)
        inp = model(size, n, 0.98 + 0.03 * ((k * 3) % 5) / 4)
        # what the printed text says (rounded), used by the JSON file as well
        vals = []
        for t, a, b in (oop, inp):
            vals.append((float(fstr(t, 7)), float(fstr(a, 6)), float(fstr(b, 6))))
        bus_sum += vals[1][2]
        line = f"{size:12d}  {size // 4:12d}  {'float':>8s}  {'sum':>6s}  {-1:6d}"
        for t, a, b in (oop, inp):
            line += f"  {fstr(t, 7)}  {fstr(a, 6)}  {fstr(b, 6)}  {0:6g}"
        lines.append(line)
        rows.append({"size": size, "count": size // 4, "vals": vals})
    avg = bus_sum / len(rows)
    lines += [
        "# Out of bounds values : 0 OK",
        f"# Avg bus bandwidth    : {avg:g} ",
        "#",
        "# Collective test concluded: all_reduce_perf",
        "",
        "#",
    ]
    return "\n".join(lines) + "\n", rows


def modern_json(rows: list[dict]) -> str:
    def d(x: float) -> str:
        return f"{x:f}"

    parts = ['{"version":2,"start_time":"2025-06-02 14:03:11","args":['
             '"./build/all_reduce_perf","-b","8","-e","128M","-f","2","-g","1",'
             '"-J","ar.json"],"env":["NCCL_DEBUG=WARN","NCCL_IB_HCA=mlx5",'
             '"CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7"],"nccl_version":21903,'
             '"config":{"nthreads":1,"ngpus":1,"minimum_bytes":8,"maximum_bytes":134217728,'
             '"step_factor":2,"warmup_iters":5,"iterations":20,"aggregated_iterations":1,'
             '"validation":1,"graph":0,"blocking_collectives":"false",'
             '"per_iter_timing":"false","parallel_init":"false","devices":[']
    devs = []
    for r in range(8):
        devs.append(f'{{"rank":{r},"group":0,"pid":{41230 + r},"hostname":"gpu-node07",'
                    f'"device":{r},"device_hex":"0000:{[7, 15, 71, 78, 135, 143, 183, 190][r]:02x}'
                    f':00","device_info":"NVIDIA A100-SXM4-80GB"}}')
    parts.append(",".join(devs) + ']},"results":[')
    res = []
    for row in rows:
        (t1, a1, b1), (t2, a2, b2) = row["vals"]
        res.append(
            f'{{"size":{row["size"]},"count":{row["count"]},"type":"float","redop":"sum",'
            f'"root":"    -1","out_of_place":{{"time":{d(t1)},"alg_bw":{d(a1)},'
            f'"bus_bw":{d(b1)},"nwrong":{d(0)}}},"in_place":{{"time":{d(t2)},'
            f'"alg_bw":{d(a2)},"bus_bw":{d(b2)},"nwrong":{d(0)}}},'
            f'"actual_iterations":20,"experiment_name":""}}')
    parts.append(",".join(res))
    avg = sum(r["vals"][1][2] for r in rows) / len(rows)
    parts.append(f'],"out_of_bounds":{{"count":0,"okay":"true"}},"average_bus_bandwidth":'
                 f'{{"bandwidth":{d(avg)},"okay":"unchecked"}},"errors":[],'
                 '"end_time":"2025-06-02 14:03:19"}')
    return "".join(parts)


def old_text() -> str:
    """Layout of nccl-tests 2.x before the version/program lines and the root column."""
    n = 2
    lines = [
        "# nThread 1 nGpus 2 minBytes 8 maxBytes 1048576 step: 2(factor) warmup iters: 5 "
        "iters: 20 validation: 1 ",
        "#",
        "# Using devices",
        "#   Rank  0 Pid  20211 on     node01 device  0 [0x3b] Tesla V100-SXM2-32GB",
        "#   Rank  1 Pid  20211 on     node01 device  1 [0x5e] Tesla V100-SXM2-32GB",
        "#",
        "#                                                     out-of-place"
        "                       in-place          ",
        "#       size         count    type   redop     time   algbw   busbw  error"
        "     time   algbw   busbw  error",
        "#        (B)    (elements)                     (us)  (GB/s)  (GB/s)       "
        "     (us)  (GB/s)  (GB/s)       ",
    ]
    for k, size in enumerate(sizes(8, 1 << 20)):
        line = f"{size:12d}  {size // 4:12d}  {'float':>6s}  {'sum':>6s}"
        for w in (1.0 + 0.02 * (k % 3), 0.99 + 0.02 * ((k + 1) % 3)):
            t = 9.2 * w + size / (21.0 * 1e3)
            a = size / t / 1e3
            b = a * 2 * (n - 1) / n
            line += f"  {t:7.2f}  {a:6.2f}  {b:6.2f}  {0:5.0e}"
        lines.append(line)
    lines += ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 5.73214 ", "#"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    text, rows = modern_text()
    (HERE / "nccl-tests2.13.10-all_reduce_perf-8gpu.txt").write_text(text)
    (HERE / "nccl-tests-json2-all_reduce_perf-8gpu.json").write_text(modern_json(rows))
    (HERE / "nccl-tests2.x-old-layout-all_reduce_perf-2gpu.txt").write_text(old_text())
