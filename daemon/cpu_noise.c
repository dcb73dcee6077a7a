/* The CPU's noise-source instruction on each architecture (cpu_noise.h). Each section owns
 * one instruction: how a process learns the CPU has it (from the kernel wherever the kernel
 * says), and one 64-bit read. RDRAND and RNDR are deliberately not used: they read a DRBG
 * that the hardware reseeds when it likes, where RDSEED, RNDRRS, DARN and the TRNG each
 * give output drawn afresh from the noise source. */
#include "cpu_noise.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#if defined(__x86_64__) || defined(__aarch64__) || defined(__powerpc64__) || defined(__s390x__)
#include <sys/auxv.h>
#endif

/* --- x86-64: RDSEED ------------------------------------------------------------------------ */
#if defined(__x86_64__)
#include <cpuid.h>

const char *cpu_noise_name(void)
{
    return "rdseed";
}

/* The kernel clears the flag for CPUs whose RDSEED it knows to be broken: 1 when it lists
 * it, 0 when not, a negative errno when /proc/cpuinfo cannot be read. */
static int kernel_lists_rdseed(void)
{
    char line[4096];
    int found = 0;
    FILE *f = fopen("/proc/cpuinfo", "re");

    if (!f)
        return -errno;
    while (!found && fgets(line, sizeof(line), f))
        if (!strncmp(line, "flags", 5))
            found = strstr(line, " rdseed ") || strstr(line, " rdseed\n");
    fclose(f);
    return found;
}

int cpu_noise_detect(char *why, size_t whylen)
{
    unsigned a, b, c, d;
    int listed;

    /* CPUID.(EAX=7,ECX=0):EBX bit 18, the same on Intel and AMD. */
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b & (1u << 18))) {
        snprintf(why, whylen, "CPU has no RDSEED (CPUID leaf 7 EBX bit 18)");
        return -ENODEV;
    }
    if ((listed = kernel_lists_rdseed()) < 0) {
        snprintf(why, whylen, "cannot read /proc/cpuinfo to see whether the kernel trusts "
                              "RDSEED: %s", strerror(-listed));
        return -ENODEV;
    }
    if (!listed) {
        snprintf(why, whylen, "kernel does not list rdseed in /proc/cpuinfo (known broken)");
        return -ENODEV;
    }
    return 0;
}

bool cpu_noise_step(uint64_t *value)
{
    unsigned char ok;

    __asm__ volatile("rdseed %0; setc %1" : "=r"(*value), "=qm"(ok) : : "cc");
    return ok;
}

void cpu_noise_relax(void)
{
    __builtin_ia32_pause();
}

/* --- arm64: RNDRRS (FEAT_RNG) -------------------------------------------------------------- */
#elif defined(__aarch64__)

#ifndef HWCAP2_RNG
#define HWCAP2_RNG (1ul << 16)        /* Linux 5.6's asm/hwcap.h */
#endif

const char *cpu_noise_name(void)
{
    return "rndrrs";
}

/* The kernel sets HWCAP2_RNG only when every CPU it runs on has FEAT_RNG, so a thread that
 * moves between cores never meets one without it. */
int cpu_noise_detect(char *why, size_t whylen)
{
    if (!(getauxval(AT_HWCAP2) & HWCAP2_RNG)) {
        snprintf(why, whylen, "CPU has no RNDRRS (the kernel's HWCAP2_RNG is clear: no "
                              "FEAT_RNG, or a kernel before 5.6)");
        return -ENODEV;
    }
    return 0;
}

/* RNDRRS is S3_3_C2_C4_1, readable at EL0. It reseeds its DRBG from the true source before
 * each read; when it could not, it reads 0 and sets NZCV to 0100 (Z). */
bool cpu_noise_step(uint64_t *value)
{
    uint64_t v;
    unsigned ok;

    __asm__ volatile("mrs %0, s3_3_c2_c4_1\n\tcset %w1, ne" : "=r"(v), "=r"(ok) : : "cc");
    *value = v;
    return ok;
}

void cpu_noise_relax(void)
{
    __asm__ volatile("yield" ::: "memory");
}

/* --- ppc64: DARN (Power ISA 3.0, POWER9 and later) ----------------------------------------- */
#elif defined(__powerpc64__)

#ifndef PPC_FEATURE2_DARN
#define PPC_FEATURE2_DARN 0x00200000  /* Linux's asm/cputable.h */
#endif

const char *cpu_noise_name(void)
{
    return "darn";
}

int cpu_noise_detect(char *why, size_t whylen)
{
    if (!(getauxval(AT_HWCAP2) & PPC_FEATURE2_DARN)) {
        snprintf(why, whylen, "CPU has no DARN (the kernel's PPC_FEATURE2_DARN is clear: "
                              "before POWER9)");
        return -ENODEV;
    }
    return 0;
}

/* L = 1, the 64-bit conditioned random number, as Linux's own powernv driver reads it. Not
 * L = 2, the raw one: the ISA leaves its distribution unspecified and IBM publishes no model
 * of it that an assessment could rest on, so crediting it would mean crediting a guess. The
 * conditioned value is credited half, as RDSEED is, and assessed all the same. All ones is
 * the error value (a genuine all-ones word, one in 2^64, is dropped with it). */
bool cpu_noise_step(uint64_t *value)
{
    uint64_t v;

    __asm__ volatile(".machine push\n\t.machine power9\n\tdarn %0, 1\n\t.machine pop"
                     : "=r"(v));
    *value = v;
    return v != UINT64_MAX;
}

void cpu_noise_relax(void)
{
    __asm__ volatile("" ::: "memory");
}

/* --- s390x: the CPACF TRNG (PRNO function 114, MSA 5) -------------------------------------- */
#elif defined(__s390x__)

#define PRNO_QUERY 0
#define PRNO_TRNG 114
#define FACILITY_MSA5 57
#ifndef HWCAP_S390_STFLE
#define HWCAP_S390_STFLE 4
#endif

const char *cpu_noise_name(void)
{
    return "trng";
}

/* STORE FACILITY LIST EXTENDED: facility bits, numbered from the left of the first word.
 * GR0 holds the list's length in words less one; it is loaded inside the asm, since a
 * register variable set before the getauxval call would not survive the call. */
static bool has_facility(unsigned bit)
{
    unsigned long list[4] = { 0 }, words = sizeof(list) / sizeof(list[0]) - 1;

    if (!(getauxval(AT_HWCAP) & HWCAP_S390_STFLE))
        return false;
    __asm__ volatile("lgr 0,%[words]\n\t.insn s,0xb2b00000,%[list]\n\tlgr %[words],0"
                     : [words] "+&d"(words), [list] "+Q"(list) : : "memory", "cc", "0");
    return bit < 256 && (list[bit / 64] >> (63 - bit % 64) & 1);
}

/* PRNO's query: a 128-bit mask of the functions this CPU has, bit 0 leftmost. */
static bool prno_has(unsigned function)
{
    unsigned char mask[16] = { 0 };
    register unsigned long r0 __asm__("0") = PRNO_QUERY;
    register unsigned long r1 __asm__("1") = (unsigned long)mask;

    __asm__ volatile(".insn rre,0xb93c0000,2,4" : : "d"(r0), "d"(r1) : "memory", "cc");
    return mask[function / 8] & (0x80 >> function % 8);
}

int cpu_noise_detect(char *why, size_t whylen)
{
    if (!has_facility(FACILITY_MSA5)) {
        snprintf(why, whylen, "CPU has no TRNG (no message-security-assist extension 5, "
                              "facility 57: before z14)");
        return -ENODEV;
    }
    if (!prno_has(PRNO_TRNG)) {
        snprintf(why, whylen, "CPU has no TRNG (PRNO's query lacks function 114)");
        return -ENODEV;
    }
    return 0;
}

/* The conditioned output only (the second operand); the raw first operand is given no
 * space. The instruction may stop early and asks to be run again (condition code 3). */
bool cpu_noise_step(uint64_t *value)
{
    register unsigned long r0 __asm__("0") = PRNO_TRNG;
    register unsigned long raw __asm__("2") = 0, raw_len __asm__("3") = 0;
    register unsigned long out __asm__("4") = (unsigned long)value, out_len __asm__("5") = 8;

    __asm__ volatile("0: .insn rre,0xb93c0000,2,4\n\tbrc 1,0b"
                     : "+d"(raw), "+d"(raw_len), "+d"(out), "+d"(out_len)
                     : "d"(r0) : "memory", "cc");
    return out_len == 0;
}

void cpu_noise_relax(void)
{
    __asm__ volatile("" ::: "memory");
}

/* --- elsewhere: none (riscv64's seed CSR is not readable from Linux user space) ------------ */
#else

const char *cpu_noise_name(void)
{
    return NULL;
}

int cpu_noise_detect(char *why, size_t whylen)
{
    snprintf(why, whylen, "this architecture has no CPU noise source a process may read "
                          "(randd uses getrandom, the hwrng device and jitter)");
    return -ENODEV;
}

bool cpu_noise_step(uint64_t *value)
{
    *value = 0;
    return false;
}

void cpu_noise_relax(void)
{
}
#endif
