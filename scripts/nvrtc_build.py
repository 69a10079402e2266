"""One .cu file compiled to a cubin by NVRTC as the GPU layer compiles it (kernels::gpu::compile: the maths
defines, common.cuh, then the file), for the scripts that read machine code without a GPU (ptxas-info.sh,
sass-hot.sh). Needs a libnvrtc on the library path (scripts/nvrtc-env.sh)."""
import ctypes
import sys

# the options of kernels::gpu::compile, for a real architecture
OPTIONS = ["--std=c++17", "-prec-div=true", "-prec-sqrt=true", "-ftz=false", "-fmad=true"]


def cubin(defines, common, name, text, arch, extra=()):
    """(NVRTC's log, the cubin's bytes) for the file `name` holding `text`; exits with NVRTC's log on an error."""
    lib = ctypes.CDLL("libnvrtc.so.13")
    src = defines + '#line 1 "common.cuh"\n' + common + f'\n#line 1 "{name}"\n' + text
    prog = ctypes.c_void_p()
    if lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), name.encode(), 0, None, None) != 0:
        sys.exit("error: nvrtcCreateProgram failed")
    opts = [f"-arch={arch}", *OPTIONS, *extra]
    arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
    n = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    log = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetProgramLog(prog, log)
    log = log.value.decode()
    if rc != 0:
        sys.exit(f"error: NVRTC could not compile {name}:\n{log}")
    size = ctypes.c_size_t()
    lib.nvrtcGetCUBINSize(prog, ctypes.byref(size))
    elf = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetCUBIN(prog, elf)
    return log, elf.raw
