/* SPDX-License-Identifier: MIT
 * cubin.c -- tp_cubin, a build tool: compiles the digest kernels with
 * NVRTC (NVIDIA's runtime compiler, from its PyPI wheel) to a cubin for a
 * real architecture (sm_80, sm_90) or to PTX for a virtual one
 * (compute_80), without a GPU and without nvcc.
 *
 *   tp_cubin KERNELS.cu HEADER.h ARCH OUT
 *
 * HEADER is handed to NVRTC under its base name, the one KERNELS.cu
 * includes.  Exit 0, or 1 with NVRTC's log on stderr. */
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *s = NULL;
    long n;
    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
        fseek(f, 0, SEEK_SET) != 0 || (s = malloc((size_t)n + 1)) == NULL ||
        fread(s, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "tp_cubin: cannot read %s\n", path);
        exit(1);
    }
    s[n] = 0;
    fclose(f);
    return s;
}

static void check(nvrtcResult r, const char *what)
{
    if (r == NVRTC_SUCCESS) return;
    fprintf(stderr, "tp_cubin: %s: %s\n", what, nvrtcGetErrorString(r));
    exit(1);
}

int main(int argc, char **argv)
{
    const char *hdr_name, *arch;
    char *src, *hdr, archopt[64], *out, *log;
    const char *opts[4];
    nvrtcProgram prog;
    nvrtcResult r;
    size_t n, logn;
    int real;
    FILE *f;
    if (argc != 5) {
        fprintf(stderr, "usage: tp_cubin KERNELS.cu HEADER.h ARCH OUT\n");
        return 2;
    }
    src = slurp(argv[1]);
    hdr = slurp(argv[2]);
    hdr_name = strrchr(argv[2], '/') ? strrchr(argv[2], '/') + 1 : argv[2];
    arch = argv[3];
    real = strncmp(arch, "sm_", 3) == 0;
    snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", arch);
    opts[0] = archopt;
    opts[1] = "--std=c++17";
    opts[2] = "--fmad=false"; /* the statistics as written, as the host reference does */
    opts[3] = "--device-as-default-execution-space";
    check(nvrtcCreateProgram(&prog, src, "kernels.cu", 1, (const char *const *)&hdr, &hdr_name),
          "create");
    r = nvrtcCompileProgram(prog, 4, opts);
    if (nvrtcGetProgramLogSize(prog, &logn) == NVRTC_SUCCESS && logn > 1) {
        log = malloc(logn);
        if (log && nvrtcGetProgramLog(prog, log) == NVRTC_SUCCESS) fputs(log, stderr);
        free(log);
    }
    check(r, "compile");
    check(real ? nvrtcGetCUBINSize(prog, &n) : nvrtcGetPTXSize(prog, &n), "size");
    out = malloc(n);
    if (out == NULL) return 1;
    check(real ? nvrtcGetCUBIN(prog, out) : nvrtcGetPTX(prog, out), "image");
    f = fopen(argv[4], "wb");
    if (f == NULL || fwrite(out, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "tp_cubin: cannot write %s\n", argv[4]);
        return 1;
    }
    nvrtcDestroyProgram(&prog);
    free(out);
    free(src);
    free(hdr);
    return 0;
}
