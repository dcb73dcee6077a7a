/* The CPU's own noise source, one instruction per architecture: what it is called, whether
 * this CPU and kernel have it, and one read. The source around it (retries, health tests,
 * credit) is source_cpu.c's; nothing here keeps state. */
#ifndef RANDD_CPU_NOISE_H
#define RANDD_CPU_NOISE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The instruction's name as STATUS, metrics and logs give it: "rdseed" (x86-64), "rndrrs"
 * (arm64), "darn" (ppc64), "trng" (s390x); NULL where the architecture has none a process
 * may read (riscv64: Linux gives user space no seed CSR). */
const char *cpu_noise_name(void);

/* 0 when this CPU has the instruction and the kernel says so; else -ENODEV with the reason
 * in why, naming the flag that was checked. */
int cpu_noise_detect(char *why, size_t whylen);

/* One attempt: true with 64 bits in value, false when the CPU had none ready (RDSEED's carry
 * clear, RNDRRS's Z set, DARN's error value). Only after cpu_noise_detect returned 0. */
bool cpu_noise_step(uint64_t *value);

/* Between failed attempts: the architecture's spin-wait hint (PAUSE, YIELD), or nothing. */
void cpu_noise_relax(void);

#endif
