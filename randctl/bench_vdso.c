/* The kernel's vDSO getrandom (Linux 6.11+) for randctl benchmark: found by reading the
 * vDSO's ELF dynamic symbols (from AT_SYSINFO_EHDR), its opaque state mapped as the kernel
 * asks, and called as an op_fn. Owns the lookup and the call; the rows are the sections'. */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench.h"

struct vgetrandom_params {            /* struct vgetrandom_opaque_params, linux/random.h */
    uint32_t size_of_opaque_state, mmap_prot, mmap_flags, reserved[13];
};

static void *vdso_symbol(const char *name)
{
    const ElfW(Ehdr) *eh = (const void *)getauxval(AT_SYSINFO_EHDR);
    const ElfW(Phdr) *ph;
    const ElfW(Dyn) *dyn = NULL;
    const ElfW(Sym) *syms = NULL;
    const char *strs = NULL;
    const Elf32_Word *hash = NULL;
    uintptr_t bias = 0;

    if (!eh)
        return NULL;
    ph = (const void *)((const char *)eh + eh->e_phoff);
    for (int i = 0; i < eh->e_phnum; i++) {
        if (ph[i].p_type == PT_LOAD)
            bias = (uintptr_t)eh + ph[i].p_offset - ph[i].p_vaddr;
        else if (ph[i].p_type == PT_DYNAMIC)
            dyn = (const void *)((const char *)eh + ph[i].p_offset);
    }
    for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
        if (dyn->d_tag == DT_SYMTAB)
            syms = (const void *)(bias + dyn->d_un.d_ptr);
        else if (dyn->d_tag == DT_STRTAB)
            strs = (const void *)(bias + dyn->d_un.d_ptr);
        else if (dyn->d_tag == DT_HASH)
            hash = (const void *)(bias + dyn->d_un.d_ptr);
    }
    if (!syms || !strs || !hash)
        return NULL;
    for (Elf32_Word i = 0; i < hash[1]; i++)       /* hash[1]: the number of symbols */
        if (syms[i].st_shndx != SHN_UNDEF && !strcmp(strs + syms[i].st_name, name))
            return (void *)(bias + syms[i].st_value);
    return NULL;
}

int vdso_open(struct vdso_ctx *v)
{
    struct vgetrandom_params params;

    v->fn = (vgetrandom_fn)vdso_symbol("__vdso_getrandom");
    if (!v->fn || v->fn(NULL, 0, 0, &params, ~(size_t)0) != 0)
        return -ENOSYS;
    v->state_len = params.size_of_opaque_state;
    v->state = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), (int)params.mmap_prot,
                    (int)params.mmap_flags, -1, 0);
    return v->state == MAP_FAILED ? -errno : 0;
}

int op_vdso(void *ctx, size_t size)
{
    struct vdso_ctx *v = ctx;

    for (size_t got = 0; got < size;) {
        ssize_t n = v->fn(v->out + got, size - got, 0, v->state, v->state_len);

        if (n < 0 && n != -EINTR)
            return (int)n;
        got += n > 0 ? (size_t)n : 0;
    }
    return 0;
}
