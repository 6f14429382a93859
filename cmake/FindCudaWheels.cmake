# SPDX-License-Identifier: MIT
# FindCudaWheels.cmake -- NVIDIA's CUDA wheels in the project venv (`make gpu`
# installs them): the CUDA runtime's headers (nvidia-cuda-runtime-cu12, and
# the crt/ headers they include, from nvidia-cuda-nvcc-cu12) and NVRTC, the
# runtime compiler (nvidia-cuda-nvrtc-cu12).  Sets CudaWheels_FOUND,
# CUDA_WHEELS_RUNTIME_INCLUDE (both folders), CUDA_WHEELS_NVRTC_INCLUDE and
# CUDA_WHEELS_NVRTC_LIBRARY.
set(_nv "")
if(EXISTS "${TP_PYTHON}")
  execute_process(COMMAND "${TP_PYTHON}" -c "import nvidia; print(list(nvidia.__path__)[0])"
    OUTPUT_VARIABLE _nv OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    set(_nv "")
  endif()
endif()
find_path(CUDA_WHEELS_RUNTIME_INCLUDE cuda_runtime_api.h HINTS "${_nv}/cuda_runtime/include"
  NO_DEFAULT_PATH)
find_path(CUDA_WHEELS_CRT_INCLUDE crt/host_defines.h HINTS "${_nv}/cuda_nvcc/include"
  NO_DEFAULT_PATH)
find_path(CUDA_WHEELS_NVRTC_INCLUDE nvrtc.h HINTS "${_nv}/cuda_nvrtc/include" NO_DEFAULT_PATH)
find_file(CUDA_WHEELS_NVRTC_LIBRARY libnvrtc.so.12 HINTS "${_nv}/cuda_nvrtc/lib" NO_DEFAULT_PATH)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CudaWheels REQUIRED_VARS CUDA_WHEELS_RUNTIME_INCLUDE
  CUDA_WHEELS_CRT_INCLUDE CUDA_WHEELS_NVRTC_INCLUDE CUDA_WHEELS_NVRTC_LIBRARY)
if(CudaWheels_FOUND)
  list(APPEND CUDA_WHEELS_RUNTIME_INCLUDE ${CUDA_WHEELS_CRT_INCLUDE})
endif()
