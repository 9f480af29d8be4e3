"""Capture real NCCL_DEBUG=INFO logs on a GPU host, for netcheck's log-analysis fixtures.

One process per GPU through torch.distributed (NCCL), a few all-gather / reduce-scatter calls,
all output interleaved on stdout the way a user would pipe it into `netcheck analyze`.
Scenario knobs come from the environment, set per rank by the caller:
  FAKE_HOSTS=1        each rank gets its own NCCL_HOSTID (NCCL sees N nodes, uses its network path)
  HANG_RANK=r         rank r never joins NCCL init (the others hang in init; the caller kills them)
  WORLD=n             n ranks (default: one per GPU); ranks share GPUs round robin, which NCCL
                      allows only between different NCCL_HOSTIDs (FAKE_HOSTS=1)
"""
import os, sys, time
import torch, torch.distributed as dist, torch.multiprocessing as mp


def worker(rank, world, port):
    if os.environ.get("FAKE_HOSTS") == "1":
        os.environ["NCCL_HOSTID"] = f"fakehost{rank}"
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.cuda.set_device(rank % torch.cuda.device_count())
    dist.init_process_group("nccl", rank=rank, world_size=world)
    if os.environ.get("HANG_RANK") == str(rank):
        time.sleep(3600)
    for total in (1 << 12, 1 << 24):
        n = total // 4 // world
        small = torch.ones(n, device="cuda") * (rank + 1)
        big = torch.empty(n * world, device="cuda")
        dist.all_gather_into_tensor(big, small)
        dist.reduce_scatter_tensor(small, big)
    torch.cuda.synchronize()
    dist.destroy_process_group()


if __name__ == "__main__":
    world = int(os.environ.get("WORLD") or torch.cuda.device_count())
    mp.spawn(worker, args=(world, 29500 + os.getpid() % 1000), nprocs=world)
