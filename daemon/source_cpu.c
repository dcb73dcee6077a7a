/* The CPU's noise source as an entropy source: RDSEED on x86-64, RNDRRS on arm64, DARN on
 * ppc64, the CPACF TRNG on s390x (cpu_noise.c owns the instructions). Here: bounded reading,
 * the credit, and the source's ops. The source is named after the instruction, so STATUS,
 * metrics and logs say what it is on that machine. */
#include "source.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

#include "cpu_noise.h"

/* Intel's guidance for RDSEED underflow, which serves the others as well: retry with the
 * spin-wait hint, but not forever. */
#define CPU_NOISE_RETRIES 64

/* Each instruction's output is conditioned by the vendor to full entropy; we credit half of
 * it, 4 bits a byte, the margin rngd and the kernel also keep for CPU generators. */
#define CPU_NOISE_ENTROPY_PER_BYTE 4.0

/* The instruction is one per process, and so is what stands for it: tests put a scripted
 * one here (source_cpu_init) to drive the read loop below through its faults. */
static cpu_step_fn *cpu_step = cpu_noise_step;

static bool cpu_read64(uint64_t *value)
{
    for (int i = 0; i < CPU_NOISE_RETRIES; i++) {
        if (cpu_step(value))
            return true;
        cpu_noise_relax();
    }
    return false;
}

/* Whole 64-bit words only; stops at the first word the CPU will not give this round. No state
 * between calls: the assessment's thread reads through it too. */
static ssize_t cpu_read(struct source *s, uint8_t *buf, size_t n)
{
    size_t done = 0;
    uint64_t word;

    (void)s;
    while (done + sizeof(word) <= n && cpu_read64(&word)) {
        memcpy(buf + done, &word, sizeof(word));   /* the caller wipes buf after use */
        done += sizeof(word);
    }
    OPENSSL_cleanse(&word, sizeof(word));          /* raw seed material: not left behind */
    return (ssize_t)done;
}

/* Kept whatever an assessment finds (the vendor conditions it; half is credited already),
 * but assessed at start all the same: a figure below the credit is logged and in STATUS. */
static const struct source_ops cpu_ops = {
    .read = cpu_read,
    .assess = source_assess_by_reading,
    .assessment = source_assessment_by_reading,
};

const char *source_cpu_name(void)
{
    const char *name = cpu_noise_name();

    return name ? name : "cpu";
}

void source_cpu_init(struct source *s, cpu_step_fn *step)
{
    cpu_step = step;
    source_init(s, source_cpu_name(), &cpu_ops, CPU_NOISE_ENTROPY_PER_BYTE, sizeof(uint64_t),
                true);
    s->noise = true;
}

int source_cpu_open(struct source *s, char *why, size_t whylen)
{
    int rc = cpu_noise_detect(why, whylen);

    if (rc < 0)
        return rc;
    source_cpu_init(s, cpu_noise_step);
    return 0;
}
