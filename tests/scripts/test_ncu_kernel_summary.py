#!/usr/bin/env python3
"""bench/ncu_kernel_summary.py (bench/ncu-step.sh) on an ncu --csv log shaped as ncu 2025 prints it for a ddpx
step (the program's own output first, thousands separators, ns and us units, cuBLAS's nvjet kernels, templated
and anonymous-namespace names): times summed per family in ms, largest first, cuBLAS grouped as one family,
templates dropped, the total and count, and a clear line when the log has no CSV."""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "bench", "ncu_kernel_summary.py")

HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
          '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')


def row(i, name, unit, value):
    return (f'"{i}","302","ddpx","127.0.0.1","{name}","1","13","(256, 1, 1)","(1056, 1, 1)","0","9.0",'
            f'"Command line profiler metrics","gpu__time_duration.sum","{unit}","{value}"')


LOG = "\n".join([
    "==PROF== Connected to process 302 (/work/build/src/cli/ddpx)",
    "summary: 4 steps in 7.09 s | 0.47 steps/s",
    HEADER,
    row(0, "void ddpx::<unnamed>::sgd_kernel<(ddpx::<unnamed>::GradSource)0>(float *, const float *)", "ns",
        "1,053,000"),
    row(1, "nvjet_sm90_tst_128x80_64x8_1x2_h_bz_bias_TNT", "ns", "23,584"),
    row(2, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", "us", "16.416"),
    row(3, "void ddpx::<unnamed>::layernorm_backward_kernel<__nv_bfloat16, (int)8>(ddpx::LayerNormBackwardArgs<T1>)",
        "ns", "14,250"),
    row(4, "void ddpx::<unnamed>::layernorm_backward_kernel<__nv_bfloat16, (int)8>(ddpx::LayerNormBackwardArgs<T1>)",
        "ns", "13,750"),
    row(5, "ddpx::<unnamed>::synthetic_kernel(float *, int *, long, long, long, unsigned long, unsigned long)", "ns",
        "19,776"),
]) + "\n"


def run(text, *args):
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
        f.write(text)
    try:
        result = subprocess.run([sys.executable, SCRIPT, f.name, *args], capture_output=True, text=True, check=True)
        return result.stdout
    finally:
        os.unlink(f.name)


def main():
    lines = run(LOG).splitlines()
    assert lines[0].split() == ["kernel", "family", "ms", "count", "share"], lines[0]
    table = {line[:36].strip(): line[36:].split() for line in lines[1:]}
    assert list(table)[:4] == ["sgd_kernel", "cublas gemm", "layernorm_backward_kernel", "synthetic_kernel"], table
    assert table["sgd_kernel"][:2] == ["1.053", "1"], table["sgd_kernel"]
    assert table["cublas gemm"][:2] == ["0.040", "2"], table["cublas gemm"]  # 23.584 us + 16.416 us
    assert table["layernorm_backward_kernel"][:2] == ["0.028", "2"], table["layernorm_backward_kernel"]
    assert table["all kernels"] == ["1.141", "6"], table["all kernels"]
    assert len(run(LOG, "2").splitlines()) == 4  # TOP=2: header, two families, total
    assert "no ncu CSV header found" in run("==PROF== nothing profiled\n")
    print("ncu_kernel_summary: all checks passed")


if __name__ == "__main__":
    main()
