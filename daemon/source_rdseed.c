/* The CPU's RDSEED instruction as an entropy source: detection (CPUID and the kernel's
 * opinion in /proc/cpuinfo) and bounded reading. RDRAND is deliberately not a seed source. */
#include "source.h"

#include <cpuid.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

/* Intel's guidance for RDSEED underflow: retry with PAUSE, but not forever. */
#define RDSEED_RETRIES 64

/* RDSEED output is conditioned to full entropy by the vendor; we credit half of it,
 * 4 bits a byte, the margin rngd and the kernel also keep for CPU generators. */
#define RDSEED_ENTROPY_PER_BYTE 4.0

static bool cpu_has_rdseed(void)
{
    unsigned a, b, c, d;

    /* CPUID.(EAX=7,ECX=0):EBX bit 18, the same on Intel and AMD. */
    return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 18));
}

/* The kernel clears the flag for CPUs whose RDSEED it knows to be broken. */
static bool kernel_lists_rdseed(void)
{
    char line[4096];
    bool found = false;
    FILE *f = fopen("/proc/cpuinfo", "re");

    if (!f)
        return false;
    while (!found && fgets(line, sizeof(line), f))
        if (!strncmp(line, "flags", 5))
            found = strstr(line, " rdseed ") || strstr(line, " rdseed\n");
    fclose(f);
    return found;
}

static bool rdseed_instruction(uint64_t *value)
{
    unsigned char ok;

    __asm__ volatile("rdseed %0; setc %1" : "=r"(*value), "=qm"(ok) : : "cc");
    return ok;
}

/* The instruction is one per process, and so is what stands for it: tests put a scripted
 * one here (source_rdseed_init) to drive the read loop below through its faults. */
static rdseed_step_fn *rdseed_step = rdseed_instruction;

static bool rdseed64(uint64_t *value)
{
    for (int i = 0; i < RDSEED_RETRIES; i++) {
        if (rdseed_step(value))
            return true;
        __builtin_ia32_pause();
    }
    return false;
}

/* Whole 64-bit words only; stops at the first word the CPU will not give this round. No state
 * between calls: the assessment's thread reads through it too. */
static ssize_t rdseed_read(struct source *s, uint8_t *buf, size_t n)
{
    size_t done = 0;
    uint64_t word;

    (void)s;
    while (done + sizeof(word) <= n && rdseed64(&word)) {
        memcpy(buf + done, &word, sizeof(word));   /* the caller wipes buf after use */
        done += sizeof(word);
    }
    OPENSSL_cleanse(&word, sizeof(word));          /* raw seed material: not left behind */
    return (ssize_t)done;
}

/* Kept whatever an assessment finds (the vendor conditions it; half is credited already),
 * but assessed at start all the same: a figure below the credit is logged and in STATUS. */
static const struct source_ops rdseed_ops = {
    .read = rdseed_read,
    .assess = source_assess_by_reading,
    .assessment = source_assessment_by_reading,
};

void source_rdseed_init(struct source *s, rdseed_step_fn *step)
{
    rdseed_step = step;
    source_init(s, "rdseed", &rdseed_ops, RDSEED_ENTROPY_PER_BYTE, sizeof(uint64_t), true);
    s->noise = true;
}

int source_rdseed_open(struct source *s, char *why, size_t whylen)
{
    if (!cpu_has_rdseed()) {
        snprintf(why, whylen, "CPU has no RDSEED (CPUID leaf 7 EBX bit 18)");
        return -ENODEV;
    }
    if (!kernel_lists_rdseed()) {
        snprintf(why, whylen, "kernel does not list rdseed in /proc/cpuinfo (known broken)");
        return -ENODEV;
    }
    source_rdseed_init(s, rdseed_instruction);
    return 0;
}
