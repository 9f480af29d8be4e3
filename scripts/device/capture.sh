#!/usr/bin/env bash
# Device-machine script: probe the environment and capture NCCL logs for the log-analysis
# fixtures. Usage (on the GPU host): scripts/device/capture.sh OUTDIR
set -u
out=${1:?outdir}; mkdir -p "$out/logs"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 NCCL_DEBUG=INFO
here=$(cd "$(dirname "$0")" && pwd)
probe() { echo "### $*"; timeout 20 "$@" 2>&1; echo; }
{
  probe date -u; probe uname -a; probe nproc; probe cat /etc/os-release
  probe nvidia-smi; probe nvidia-smi -L; probe nvidia-smi topo -m
  probe python3 -c 'import torch, nvidia.nccl as m; print(torch.__version__, torch.cuda.nccl.version(), m.__path__[0])'
  probe sh -c 'ls -la $(python3 -c "import nvidia.nccl as m; print(m.__path__[0])")/lib'
  probe sh -c 'ldconfig -p | grep -E "nccl|fabric|ibverbs|efa|libcuda"'
  probe sh -c 'ls /opt/amazon /usr/local/nvidia /usr/local/nvidia/lib64 2>&1 | head -40'
  probe fi_info --version; probe fi_info -l; probe sh -c 'fi_info -p tcp | head -40'
  probe sh -c 'ls /sys/class/infiniband /dev/infiniband 2>&1'
  probe sh -c 'ulimit -l; df -h /dev/shm; grep -i huge /proc/meminfo'
  probe sh -c 'env | grep -E "^(NCCL|FI_|OFI|CUDA|LD_)" | sort'
  probe sh -c 'command -v cargo rustc gcc nvcc; ls /usr/local/bin | head -50'
} > "$out/probe.txt" 2>&1

cap() { # name, timeout, env...
  local name=$1 t=$2; shift 2
  echo "== $name" >&2
  env "$@" timeout -s KILL "$t" python3 "$here/nccl_log_capture.py" > "$out/logs/$name.log" 2>&1
  echo "exit=$?" >> "$out/logs/$name.exit"
}
cap nvlink 120
cap shm 120 NCCL_P2P_DISABLE=1
cap socket-intranode 120 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1
cap fakehosts-socket 120 FAKE_HOSTS=1
cap fakehosts-plugin-missing 120 FAKE_HOSTS=1 NCCL_NET_PLUGIN=ofi
cap fakehosts-ifname-lo 120 FAKE_HOSTS=1 NCCL_SOCKET_IFNAME=lo
cap fakehosts-netforced-ib 60 FAKE_HOSTS=1 NCCL_NET=IB
cap hang-init 25 HANG_RANK=1
syslib=/lib/x86_64-linux-gnu/libnccl.so.2
[ -e $syslib ] && cap system-nccl 120 LD_PRELOAD=$syslib
ls -la "$out/logs" >&2
