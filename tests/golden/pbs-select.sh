#!/bin/bash
#PBS -N mpibench-c-0123456789abcdef
#PBS -S /bin/bash
#PBS -l select=2:ncpus=8:mpiprocs=4
#PBS -l place=scatter
#PBS -l walltime=01:02:05
#PBS -q workq
#PBS -A 'proj 42'
#PBS -o '/scratch/camp aign/runs/c-0123456789abcdef/pbs.out'
#PBS -e '/scratch/camp aign/runs/c-0123456789abcdef/pbs.err'
#PBS -r n
# mpibench job mpibench-c-0123456789abcdef: cells c-0123456789abcdef
# generated; every value below is shell-quoted
export MPIBENCH_JOB_DIR='/scratch/camp aign/runs/c-0123456789abcdef'
cd '/scratch/camp aign/runs/c-0123456789abcdef'
# hosts of this allocation, one line per rank slot
if [ -n "${PBS_NODEFILE:-}" ] && [ -r "$PBS_NODEFILE" ]; then
  cp "$PBS_NODEFILE" '/scratch/camp aign/runs/c-0123456789abcdef/hostfile'
  export OMPI_MCA_orte_default_hostfile='/scratch/camp aign/runs/c-0123456789abcdef/hostfile' PRTE_MCA_prte_default_hostfile='/scratch/camp aign/runs/c-0123456789abcdef/hostfile' HYDRA_HOST_FILE='/scratch/camp aign/runs/c-0123456789abcdef/hostfile'
elif [ -n "${SLURM_JOB_NODELIST:-}" ]; then
  mb_per=(); mb_tpn=4
  for mb_t in ${mb_tpn//,/ }; do
    mb_r=1; case $mb_t in *"(x"*) mb_r=${mb_t#*(x}; mb_r=${mb_r%)};; esac
    while [ "$mb_r" -gt 0 ]; do mb_per+=("${mb_t%%(*}"); mb_r=$((mb_r - 1)); done
  done
  mb_k=0
  for mb_h in $(scontrol show hostnames "$SLURM_JOB_NODELIST"); do
    mb_n=${mb_per[$mb_k]:-${mb_per[${#mb_per[@]}-1]}}; mb_k=$((mb_k + 1))
    mb_i=0; while [ "$mb_i" -lt "$mb_n" ]; do echo "$mb_h"; mb_i=$((mb_i + 1)); done
  done >'/scratch/camp aign/runs/c-0123456789abcdef/hostfile'
else
  hostname >'/scratch/camp aign/runs/c-0123456789abcdef/hostfile'
fi
export MPIBENCH_HOSTFILE='/scratch/camp aign/runs/c-0123456789abcdef/hostfile'
# nodes of this allocation that are one host: no default core binding (see docs)
if [ -n "${SLURM_JOB_NODELIST:-}" ] && command -v scontrol >/dev/null; then
  mb_nodes=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | wc -l)
  mb_hosts=$(scontrol show node -o "$SLURM_JOB_NODELIST" 2>/dev/null | sed -n 's/.*NodeHostName=\([^ ]*\).*/\1/p' | sort -u | wc -l)
  if [ "$mb_nodes" -gt 1 ] && [ "$mb_hosts" -ge 1 ] && [ "$mb_hosts" -lt "$mb_nodes" ]; then
    export OMPI_MCA_hwloc_base_binding_policy="${OMPI_MCA_hwloc_base_binding_policy:-none}"
    for mb_f in '/scratch/camp aign/runs/c-0123456789abcdef/shared_host'; do mkdir -p "$(dirname "$mb_f")" && echo "$mb_nodes nodes on $mb_hosts host(s)" >"$mb_f"; done
  fi
fi
module load mvapich2/2.3
# cell c-0123456789abcdef
cd '/scratch/camp aign/runs/c-0123456789abcdef'
rm -f exit_status timing.json launcher_stopped
mb_start=$(date +%s.%N)
mb_launch=
mb_rc=0
if [ $mb_rc -eq 0 ]; then mb_launch=$(date +%s.%N); env -- 'ODD=it'"'"'s $HOME; `x`' UCX_TLS=tcp,self timeout --kill-after=10 300 srun --mpi=pmix --ntasks 4 /opt/core --jsonl '/scratch/camp aign/runs/c-0123456789abcdef/core.jsonl' PingPong >stdout.txt 2>stderr.txt || mb_rc=$?; fi
mb_end=$(date +%s.%N)
printf '{"started": %s, "launch_started": %s, "finished": %s}\n' "$mb_start" "${mb_launch:-null}" "$mb_end" >timing.json
echo $mb_rc >exit_status.tmp && mv exit_status.tmp exit_status
