/* The config parser (daemon/config.c): defaults, every error class with its file:line
 * message, untouched config on failure, edges, the shipped conf/randd.conf, and what a
 * reload applies at once or leaves for a restart. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "randen.h"
#include "runner.h"

static char err[512];

/* Parses text as a file named "t.conf". */
static int parse(struct config *c, const char *text)
{
    FILE *f = fmemopen((void *)text, strlen(text), "r");
    int rc;

    ck_assert_ptr_nonnull(f);
    err[0] = '\0';
    rc = config_parse(c, "t.conf", f, err, sizeof(err));
    fclose(f);
    return rc;
}

/* The index of the key called name, so tests say which key they mean. */
static size_t key_index(const char *name)
{
    struct config_key_info key;
    size_t i;

    for (i = 0; config_key(i, &key); i++)
        if (!strcmp(key.name, name))
            return i;
    ck_abort_msg("no key %s", name);
    return i;
}

static void check_error(const char *text, const char *want)
{
    struct config c;

    ck_assert_msg(parse(&c, text) == -1, "accepted: %s", text);
    ck_assert_str_eq(err, want);
}

START_TEST(defaults_are_the_documented_ones)
{
    struct config c;

    config_defaults(&c);
    ck_assert_str_eq(c.socket, "/run/randd/randd.sock");
    ck_assert(c.cpu_source && c.hwrng && c.kernel_topup);
    ck_assert_str_eq(c.hwrng_device, "/dev/hwrng");
    ck_assert_uint_eq(c.reseed_interval, 60);
    ck_assert_uint_eq(c.reseed_bytes, 1ull << 30);
    ck_assert_uint_eq(c.kernel_topup_interval, 300);
    ck_assert_uint_eq(c.socket_mode, 0666);
    ck_assert_str_eq(c.socket_group, "");
    ck_assert_uint_eq(c.max_clients, 1024);
    ck_assert_uint_eq(c.idle_timeout, 300);
    ck_assert_uint_eq(c.egd_idle_timeout, 0);        /* QEMU's connection lives with its VM */
    ck_assert_str_eq(c.trusted_group, "");
    ck_assert_uint_eq(c.trusted_gid, (gid_t)-1);     /* none: gid 0 would trust group root */
    ck_assert_int_eq(c.engine, RANDD_ENGINE_CYMRIC);
    ck_assert_int_eq(c.cipher, CONFIG_AUTO);
    ck_assert(!c.require_noise_source);              /* serves on getrandom alone, saying so */
}
END_TEST

/* cipher = auto is AES-256-CTR exactly where the CPU does AES in hardware; the names choose. */
START_TEST(cipher_is_auto_chacha20_or_hardware_aes256ctr)
{
    struct config c;
    int aes = randd_crypto_has_hardware_aes();
    char buf[32];

    config_defaults(&c);
    ck_assert_int_eq(config_cipher(&c), aes ? RANDD_STREAM_AES256CTR : RANDD_STREAM_CHACHA20);
    ck_assert_int_eq(parse(&c, "cipher = chacha20\n"), 0);
    ck_assert_int_eq(config_cipher(&c), RANDD_STREAM_CHACHA20);
    ck_assert_str_eq(config_value_text(&c, key_index("cipher"), buf, sizeof(buf)), "chacha20");
    ck_assert_int_eq(parse(&c, "cipher = auto\n"), 0);
    ck_assert_str_eq(config_value_text(&c, key_index("cipher"), buf, sizeof(buf)), "auto");
    if (!aes) {
        fprintf(stderr, "SKIP: %s: no hardware AES here, aes256ctr is refused\n", __func__);
        return;
    }
    ck_assert_int_eq(parse(&c, "cipher = aes256ctr\n"), 0);
    ck_assert_int_eq(config_cipher(&c), RANDD_STREAM_AES256CTR);
    ck_assert_str_eq(config_value_text(&c, key_index("cipher"), buf, sizeof(buf)), "aes256ctr");
    /* A reload between auto and the cipher auto chose here changes nothing: no restart is
     * pending for it; one to the other cipher is. */
    struct config auto_cipher, chacha;

    config_defaults(&auto_cipher);
    ck_assert(!config_pending_restart(&auto_cipher, &c, key_index("cipher")));
    ck_assert(!config_pending_restart(&c, &auto_cipher, key_index("cipher")));
    ck_assert_int_eq(parse(&chacha, "cipher = chacha20\n"), 0);
    ck_assert(config_pending_restart(&auto_cipher, &chacha, key_index("cipher")));
}
END_TEST

/* aes256ctr where OpenSSL may not run AES in hardware is an error, never table AES or a quiet
 * ChaCha20; auto then means ChaCha20. Made so here with this architecture's OpenSSL capability
 * variable, set to hide AES (OPENSSL_ia32cap: bits 57 and 33, CPUID.1:ECX's AES and PCLMULQDQ;
 * OPENSSL_armcap and OPENSSL_ppccap: no features at all), so randd counts AES as absent;
 * where OpenSSL has no such variable randd uses no AES at all. */
START_TEST(aes256ctr_without_hardware_aes_is_an_error_with_file_and_line)
{
    const char *mask = randd_crypto_aes_mask_variable();
    char want[256];
    struct config c;

    if (mask) {
        ck_assert_int_eq(setenv(mask, strcmp(mask, "OPENSSL_ia32cap") ? "0"
                                                                       : "~0x200000200000000",
                                1), 0);
        snprintf(want, sizeof(want), "t.conf:2: cipher: %s is set, which may hide the CPU's "
                 "AES instructions from OpenSSL; use auto or chacha20: \"aes256ctr\"", mask);
    } else {
        snprintf(want, sizeof(want), "t.conf:2: cipher: this CPU does not do AES in hardware; "
                 "use auto or chacha20: \"aes256ctr\"");
    }
    ck_assert_msg(!randd_crypto_has_hardware_aes(), "hardware AES with %s set", mask);
    check_error("\ncipher = aes256ctr\n", want);
    /* CTR_DRBG's AES likewise: hash_drbg is offered instead. */
    check_error("engine = ctr_drbg\n", "t.conf:1: engine: this CPU does not do AES in "
                "hardware, which CTR_DRBG needs here (randd never runs table AES); use "
                "hash_drbg: \"ctr_drbg\"");
    ck_assert_int_eq(parse(&c, "cipher = auto\n"), 0);
    ck_assert_int_eq(config_cipher(&c), RANDD_STREAM_CHACHA20);
    if (mask)
        unsetenv(mask);
}
END_TEST

/* mode = approved is named in the file and refused, with the file and line, until randd
 * serves from its SP 800-90A DRBGs: --check-config and a reload say so, and no daemon claims
 * an approved mode it does not run. */
/* mode = approved settles what it implies (config.c settle_approved_mode): a DRBG engine,
 * ctr_drbg with hardware AES and hash_drbg without, unless the file chose one; and
 * require_noise_source. A file asking otherwise is refused at its line, naming the mode's. */
START_TEST(approved_mode_takes_a_drbg_and_noise_sources_only)
{
    struct config c;
    char value[32];

    ck_assert_int_eq(parse(&c, "\nmode = approved\n"), 0);
    ck_assert_int_eq(c.mode, CONFIG_MODE_APPROVED);
    ck_assert_str_eq(config_value_text(&c, key_index("mode"), value, sizeof(value)), "approved");
    ck_assert_int_eq(c.engine, randd_crypto_has_hardware_aes() ? RANDD_ENGINE_CTR_DRBG
                                                              : RANDD_ENGINE_HASH_DRBG);
    ck_assert(c.require_noise_source);
    ck_assert_int_eq(parse(&c, "engine = hash_drbg\nmode = approved\n"), 0);
    ck_assert_int_eq(c.engine, RANDD_ENGINE_HASH_DRBG);
    ck_assert_int_eq(parse(&c, "mode = approved\nrequire_noise_source = yes\n"), 0);
    check_error("mode = approved\n\nengine = cymric\n",
                "t.conf:3: engine = cymric: mode = approved (line 1) needs an SP 800-90A "
                "DRBG: use ctr_drbg or hash_drbg, or leave engine out");
    check_error("require_noise_source = no\nmode = approved\n",
                "t.conf:1: require_noise_source = no: mode = approved (line 2) seeds only "
                "from noise sources, whose entropy randd measures; the kernel's word is not an "
                "approved source");
    check_error("mode = approved\ncpu_source = no\nhwrng = no\njitter = no\n",
                "t.conf:1: mode = approved, but no noise source is on (cpu_source, hwrng and "
                "jitter = no): randd could never serve");
    check_error("mode = fips\n", "t.conf:1: mode: not default or approved: \"fips\"");
    ck_assert_int_eq(parse(&c, "mode = default\n"), 0);
    ck_assert_int_eq(c.mode, CONFIG_MODE_DEFAULT);
    ck_assert_int_eq(c.engine, RANDD_ENGINE_CYMRIC);
    ck_assert(!c.require_noise_source);
    ck_assert_str_eq(config_value_text(&c, key_index("mode"), value, sizeof(value)), "default");
}
END_TEST

/* engine = randen where the CPU has no AES round (hidden here, so every machine runs it) is
 * an error with the file and line, as aes256ctr is: --check-config and a reload say it, not
 * only a daemon that then refuses to start. */
START_TEST(randen_without_an_aes_round_is_an_error_with_file_and_line)
{
    randd_randen_hide_cpu_aes(true);
    check_error("\n\nengine = randen\n",
                "t.conf:3: engine: this CPU has no AES round instructions (x86 AES-NI, ARMv8 "
                "AES), which Randen needs; use cymric: \"randen\"");
    randd_randen_hide_cpu_aes(false);
}
END_TEST

START_TEST(values_comments_and_whitespace_are_parsed)
{
    struct config c;

    ck_assert_int_eq(parse(&c, "# comment\n\n  reseed_interval\t=  30  # trailing\n"
                                "rdseed = off\nhwrng=false\nkernel_topup = 0\n"
                                "reseed_bytes = 16M\nkernel_topup_interval = 0\n"
                                "socket = /tmp/a#b.sock\nsocket_mode = 0660\n"
                                "trusted_group = root\n"), 0);
    ck_assert_uint_eq(c.socket_mode, 0660);
    ck_assert_str_eq(c.trusted_group, "root");
    ck_assert_uint_eq(c.trusted_gid, 0);             /* looked up as the file was read */
    ck_assert_uint_eq(c.reseed_interval, 30);
    ck_assert(!c.cpu_source && !c.hwrng && !c.kernel_topup);
    ck_assert_uint_eq(c.reseed_bytes, 16ull << 20);
    ck_assert_uint_eq(c.kernel_topup_interval, 0);
    ck_assert_str_eq(c.socket, "/tmp/a#b.sock");     /* '#' inside a word is not a comment */
    ck_assert_int_eq(parse(&c, "egd_listen = 127.0.0.2:8888\negd_socket = /run/egd\n"), 0);
    ck_assert_str_eq(c.egd_listen, "127.0.0.2:8888");
    ck_assert_int_eq(parse(&c, "egd_listen = [::1]:7777\negd_idle_timeout = 3600\n"), 0);
    ck_assert_uint_eq(c.egd_idle_timeout, 3600);
    if (randd_randen_available()) {
        ck_assert_int_eq(parse(&c, "engine = randen\n"), 0);
        ck_assert_int_eq(c.engine, RANDD_ENGINE_RANDEN);
    }
    if (randd_crypto_has_hardware_aes()) {
        ck_assert_int_eq(parse(&c, "engine = ctr_drbg\n"), 0);
        ck_assert_int_eq(c.engine, RANDD_ENGINE_CTR_DRBG);
    }
    ck_assert_int_eq(parse(&c, "engine = hash_drbg\n"), 0);
    ck_assert_int_eq(c.engine, RANDD_ENGINE_HASH_DRBG);
    ck_assert_int_eq(parse(&c, "engine = cymric\n"), 0);
    ck_assert_int_eq(c.engine, RANDD_ENGINE_CYMRIC);
    ck_assert_int_eq(parse(&c, "cpu_source = no\n"), 0);     /* the name rdseed became */
    ck_assert(!c.cpu_source);
}
END_TEST

START_TEST(limits_are_inclusive)
{
    struct config c;

    ck_assert_int_eq(parse(&c, "reseed_interval = 86400\nreseed_bytes = 64G\n"), 0);
    ck_assert_uint_eq(c.reseed_bytes, 64ull << 30);
    ck_assert_int_eq(parse(&c, "reseed_interval = 1\nreseed_bytes = 1024K\n"), 0);
    ck_assert_uint_eq(c.reseed_bytes, 1ull << 20);
}
END_TEST

START_TEST(each_error_names_file_line_and_key)
{
    check_error("\n\nmax_children = 3\n", "t.conf:3: max_children: unknown key");
    check_error("reseed_interval 60\n", "t.conf:1: reseed_interval 60: expected 'key = value'");
    check_error("rdseed =\n", "t.conf:1: rdseed: empty value");
    check_error("cpu_source = no\nrequire_noise_source = yes\njitter = no\nhwrng = no\n",
                "t.conf:2: require_noise_source = yes, but no noise source is on (cpu_source, "
                "hwrng and jitter = no): randd could never serve");
    check_error("cpu_source = no\njitter = no\n# c\ngetrandom = no\nhwrng = no\n",
                "t.conf:5: every source is off (cpu_source, getrandom, hwrng and jitter): "
                "randd could never seed its generator, and would serve nothing");
    check_error("reseed_interval = many\n", "t.conf:1: reseed_interval: not a number: \"many\"");
    check_error("reseed_interval = 0\n",
                "t.conf:1: reseed_interval: out of range (1 to 86400): \"0\"");
    check_error("reseed_interval = 86401\n",
                "t.conf:1: reseed_interval: out of range (1 to 86400): \"86401\"");
    check_error("reseed_interval = -5\n", "t.conf:1: reseed_interval: not a number: \"-5\"");
    check_error("reseed_interval = 60s\n", "t.conf:1: reseed_interval: not a number: \"60s\"");
    check_error("reseed_interval = 99999999999999999999999\n",
                "t.conf:1: reseed_interval: number too large: \"99999999999999999999999\"");
    check_error("reseed_bytes = 1T\n", "t.conf:1: reseed_bytes: not a size (a number with an "
                                       "optional K, M or G): \"1T\"");
    check_error("reseed_bytes = 1023K\n",
                "t.conf:1: reseed_bytes: out of range (1048576 to 68719476736): \"1023K\"");
    check_error("hwrng = maybe\n", "t.conf:1: hwrng: not yes or no: \"maybe\"");
    check_error("jitter = no\nrequire_noise_source = maybe\n",
                "t.conf:2: require_noise_source: not yes or no: \"maybe\"");
    check_error("engine = aes\n",
                "t.conf:1: engine: not cymric, randen, ctr_drbg or hash_drbg: \"aes\"");
    check_error("cipher = aes\n", "t.conf:1: cipher: not auto, chacha20 or aes256ctr: \"aes\"");
    check_error("cipher = ChaCha20\n",
                "t.conf:1: cipher: not auto, chacha20 or aes256ctr: \"ChaCha20\"");
    check_error("hwrng_device = dev/hwrng\n",
                "t.conf:1: hwrng_device: not an absolute path: \"dev/hwrng\"");
    check_error("rdseed = yes\nhwrng = no\nrdseed = no\n",
                "t.conf:3: rdseed: duplicate key (first set at line 1)");
    check_error("cpu_source = yes\nrdseed = no\n",          /* rdseed: cpu_source's old name */
                "t.conf:2: rdseed: duplicate key (first set at line 1 as cpu_source)");
    check_error("rdseed = yes\ncpu_source = no\n",
                "t.conf:2: cpu_source: duplicate key (first set at line 1 as rdseed)");
    check_error("cpu_source = maybe\n", "t.conf:1: cpu_source: not yes or no: \"maybe\"");
    check_error("= 5\n", "t.conf:1: (empty): unknown key");
    check_error("socket_mode = 0999\n",
                "t.conf:1: socket_mode: not an octal mode (0000 to 0777): \"0999\"");
    check_error("egd_listen = 0.0.0.0:8888\n", "t.conf:1: egd_listen: not a loopback "
                "address:port (EGD has no authentication): \"0.0.0.0:8888\"");
    check_error("egd_listen = 192.168.1.5:8888\n", "t.conf:1: egd_listen: not a loopback "
                "address:port (EGD has no authentication): \"192.168.1.5:8888\"");
    check_error("egd_listen = 127.0.0.1\n", "t.conf:1: egd_listen: not a loopback "
                "address:port (EGD has no authentication): \"127.0.0.1\"");
    check_error("user = no-such-user-here\n",
                "t.conf:1: user: no such user: \"no-such-user-here\"");
    check_error("trusted_group = no-such-group-here\n",
                "t.conf:1: trusted_group: no such group: \"no-such-group-here\"");
}
END_TEST

START_TEST(workers_is_auto_or_a_count_within_its_limits)
{
    struct config c;
    char buf[16];
    size_t i = 0;
    struct config_key_info key;
    cpu_set_t cpus;

    config_defaults(&c);
    ck_assert_msg(c.workers == 1, "default workers: want 1 (one loop, as before), got %u",
                  c.workers);
    ck_assert_uint_eq(config_workers(&c), 1);
    ck_assert_int_eq(parse(&c, "workers = 2\n"), 0);
    ck_assert_uint_eq(config_workers(&c), 2);
    ck_assert_int_eq(parse(&c, "workers = 64\n"), 0);
    ck_assert_uint_eq(config_workers(&c), 64);
    ck_assert_int_eq(parse(&c, "workers = auto\n"), 0);
    ck_assert_uint_eq(c.workers, CONFIG_WORKERS_AUTO);
    ck_assert_int_eq(sched_getaffinity(0, sizeof(cpus), &cpus), 0);
    ck_assert_uint_eq(config_workers(&c), (unsigned)CPU_COUNT(&cpus) > CONFIG_WORKERS_MAX
                                              ? CONFIG_WORKERS_MAX
                                              : (unsigned)CPU_COUNT(&cpus));
    while (config_key(i, &key) && strcmp(key.name, "workers"))
        i++;
    ck_assert_str_eq(config_value_text(&c, i, buf, sizeof(buf)), "auto");
    ck_assert(key.at_restart && key.quoted);
    check_error("workers = 0\n",
                "t.conf:1: workers: not auto or a number of serving loops (1 to 64): \"0\"");
    check_error("workers = 65\n",
                "t.conf:1: workers: not auto or a number of serving loops (1 to 64): \"65\"");
    check_error("\nworkers = many\n",
                "t.conf:2: workers: not auto or a number of serving loops (1 to 64): \"many\"");
    check_error("workers = -1\n",
                "t.conf:1: workers: not auto or a number of serving loops (1 to 64): \"-1\"");
}
END_TEST

/* The cap on one uid's connections: auto is none but max_clients (fairness alone, issue 42),
 * a number is taken as given, a reload applies it at once, and a bad one names file, line
 * and key. */
START_TEST(max_clients_per_uid_is_auto_or_a_count_and_applies_at_once)
{
    struct config c, reread;
    char buf[16];
    size_t i = 0;
    struct config_key_info key;

    config_defaults(&c);
    ck_assert_uint_eq(c.max_clients_per_uid, CONFIG_AUTO);
    ck_assert_msg(config_clients_per_uid(&c) == 1024, "default cap: want none but the 1024 "
                  "of max_clients, got %u", config_clients_per_uid(&c));
    ck_assert_int_eq(parse(&c, "max_clients = 7\n"), 0);
    ck_assert_uint_eq(config_clients_per_uid(&c), 7);
    ck_assert_int_eq(parse(&c, "max_clients = 1\n"), 0);
    ck_assert_uint_eq(config_clients_per_uid(&c), 1);
    ck_assert_int_eq(parse(&c, "max_clients = 64\nmax_clients_per_uid = 60\n"), 0);
    ck_assert_uint_eq(config_clients_per_uid(&c), 60);
    ck_assert_int_eq(parse(&c, "max_clients_per_uid = 65536\n"), 0);
    while (config_key(i, &key) && strcmp(key.name, "max_clients_per_uid"))
        i++;
    ck_assert_str_eq(config_value_text(&c, i, buf, sizeof(buf)), "65536");
    ck_assert(!key.at_restart && key.quoted);
    config_defaults(&c);
    ck_assert_str_eq(config_value_text(&c, i, buf, sizeof(buf)), "auto");
    ck_assert_int_eq(parse(&reread, "max_clients_per_uid = 3\n"), 0);
    config_apply_live(&c, &reread);
    ck_assert_uint_eq(config_clients_per_uid(&c), 3);
    ck_assert(!config_pending_restart(&c, &reread, i));
    check_error("max_clients_per_uid = 0\n", "t.conf:1: max_clients_per_uid: not auto or a "
                "number of connections (1 to 65536): \"0\"");
    check_error("\nmax_clients_per_uid = half\n", "t.conf:2: max_clients_per_uid: not auto or "
                "a number of connections (1 to 65536): \"half\"");
    check_error("max_clients_per_uid = 65537\n", "t.conf:1: max_clients_per_uid: not auto or "
                "a number of connections (1 to 65536): \"65537\"");
}
END_TEST

/* The rule for egd_listen and for EGD sockets systemd passes. */
START_TEST(loopback_is_127_slash_8_and_ipv6s_loopback_plain_or_mapped)
{
    static const char *const yes[] = { "127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1" },
                      *const no[] = { "0.0.0.0", "10.0.0.1", "128.0.0.1", "::", "::2",
                                      "::ffff:10.0.0.1", "fe80::1" };

    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]) + sizeof(no) / sizeof(no[0]); i++) {
        bool want = i < sizeof(yes) / sizeof(yes[0]);
        const char *text = want ? yes[i] : no[i - sizeof(yes) / sizeof(yes[0])];
        struct sockaddr_in a4 = { .sin_family = AF_INET };
        struct sockaddr_in6 a6 = { .sin6_family = AF_INET6 };
        const struct sockaddr *sa = (const struct sockaddr *)&a4;

        if (inet_pton(AF_INET, text, &a4.sin_addr) != 1) {
            ck_assert_int_eq(inet_pton(AF_INET6, text, &a6.sin6_addr), 1);
            sa = (const struct sockaddr *)&a6;
        }
        ck_assert_msg(config_is_loopback(sa) == want, "%s: loopback %s, wanted %s", text,
                      want ? "no" : "yes", want ? "yes" : "no");
    }
}
END_TEST

START_TEST(overlong_values_and_lines_are_refused)
{
    static char text[1200];
    struct config c;

    snprintf(text, sizeof(text), "socket = /%0120d\n", 0);
    ck_assert_int_eq(parse(&c, text), -1);
    ck_assert_msg(!strncmp(err, "t.conf:1: socket: path longer than 107 bytes: ", 46), "%s", err);
    memset(text, ' ', 1100);
    strcpy(text + 1100, "x = 1\n");
    ck_assert_int_eq(parse(&c, text), -1);
    ck_assert_str_eq(err, "t.conf:1: line longer than 1024 bytes");
}
END_TEST

START_TEST(every_error_is_reported_one_a_line)
{
    static char text[1400];
    int n;

    n = snprintf(text, sizeof(text), "reseed_interval = 0\nbogus = 1\n%01100d\n", 0);
    snprintf(text + n, sizeof(text) - (size_t)n, "max_clients = many\nrdseed = no\n");
    check_error(text, "t.conf:1: reseed_interval: out of range (1 to 86400): \"0\"\n"
                      "t.conf:2: bogus: unknown key\n"
                      "t.conf:3: line longer than 1024 bytes\n"
                      "t.conf:4: max_clients: not a number: \"many\"");
}
END_TEST

START_TEST(failed_parse_leaves_the_config_untouched)
{
    struct config c, before;

    ck_assert_int_eq(parse(&c, "reseed_interval = 30\n"), 0);
    before = c;
    ck_assert_int_eq(parse(&c, "reseed_interval = 45\nbogus = 1\n"), -1);
    ck_assert_mem_eq(&c, &before, sizeof(c));
}
END_TEST

START_TEST(missing_file_is_defaults_only_when_allowed)
{
    struct config c;

    ck_assert_int_eq(config_load(&c, "/nonexistent/randd.conf", true, err, sizeof(err)), 0);
    ck_assert_uint_eq(c.reseed_interval, 60);
    ck_assert_int_eq(config_load(&c, "/nonexistent/randd.conf", false, err, sizeof(err)), -1);
    ck_assert_str_eq(err, "/nonexistent/randd.conf: No such file or directory");
}
END_TEST

/* conf/randd.conf documents every key with the default the code uses, so they cannot drift. */
START_TEST(shipped_config_documents_every_key_with_its_default)
{
    static char text[16384];
    struct config shipped, defaults;
    struct config_key_info key;
    FILE *f = fopen("conf/randd.conf", "r");
    size_t n;

    ck_assert_msg(f != NULL, "conf/randd.conf not found (tests run from the repository root)");
    n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    ck_assert_int_eq(config_load(&shipped, "conf/randd.conf", false, err, sizeof(err)), 0);
    config_defaults(&defaults);
    ck_assert_mem_eq(&shipped, &defaults, sizeof(shipped));
    for (size_t i = 0; config_key(i, &key); i++) {
        char line[256];

        snprintf(line, sizeof(line), "\n#%s =%s%s\n", key.name, *key.default_text ? " " : "",
                 key.default_text);
        ck_assert_msg(strstr(text, line), "conf/randd.conf lacks \"%s\"", line + 1);
    }
}
END_TEST


/* SIGHUP: live keys take the re-read value; restart-only ones keep theirs and are pending. */
START_TEST(reload_applies_live_keys_and_leaves_restart_keys_pending)
{
    struct config in_effect, reread;

    ck_assert_int_eq(parse(&in_effect, "socket = /a\nreseed_interval = 30\n"), 0);
    ck_assert_int_eq(parse(&reread, "socket = /b\nreseed_interval = 45\nrdseed = no\n"
                                     "egd_idle_timeout = 600\ntrusted_group = root\n"), 0);
    config_apply_live(&in_effect, &reread);
    ck_assert_uint_eq(in_effect.reseed_interval, 45);
    ck_assert_str_eq(in_effect.trusted_group, "root");     /* live, and its id with it */
    ck_assert_uint_eq(in_effect.trusted_gid, 0);
    ck_assert_uint_eq(in_effect.egd_idle_timeout, 600);
    ck_assert_str_eq(in_effect.socket, "/a");
    ck_assert(in_effect.cpu_source);
    ck_assert(config_pending_restart(&in_effect, &reread, key_index("socket")));
    ck_assert(config_pending_restart(&in_effect, &reread, key_index("cpu_source")));
    ck_assert(!config_pending_restart(&in_effect, &reread, key_index("reseed_interval")));
    ck_assert(!config_pending_restart(&in_effect, &reread, key_index("engine")));
    ck_assert(!config_pending_restart(&in_effect, &reread, key_index("cipher")));
    /* chacha20 over auto: a restart is pending only where auto chose AES-256-CTR. */
    ck_assert_int_eq(parse(&reread, "cipher = chacha20\n"), 0);
    config_apply_live(&in_effect, &reread);
    ck_assert_int_eq(in_effect.cipher, CONFIG_AUTO);
    ck_assert_msg(config_pending_restart(&in_effect, &reread, key_index("cipher")) ==
                  (config_cipher(&in_effect) == RANDD_STREAM_AES256CTR),
                  "auto here is %s: a reload to chacha20 %s a pending restart",
                  randd_stream_cipher_name(config_cipher(&in_effect)),
                  config_cipher(&in_effect) == RANDD_STREAM_AES256CTR ? "needs" : "is not");
}
END_TEST

/* What mode = approved implies follows the mode in effect, not a reloaded file: an approved
 * daemon keeps require_noise_source through a reload without the mode (or with it = no: a
 * live key may not undo the restart-only mode), and a default daemon reloaded with the mode
 * waits for the restart before it requires noise sources. */
START_TEST(a_reload_follows_the_mode_in_effect_not_the_files)
{
    struct config in_effect, reread;

    ck_assert_int_eq(parse(&in_effect, "mode = approved\n"), 0);
    ck_assert_int_eq(parse(&reread, "reseed_interval = 45\n"), 0);
    config_apply_live(&in_effect, &reread);
    ck_assert_uint_eq(in_effect.reseed_interval, 45);
    ck_assert(in_effect.require_noise_source);
    ck_assert(config_pending_restart(&in_effect, &reread, key_index("mode")));
    ck_assert_int_eq(parse(&reread, "require_noise_source = no\n"), 0);
    config_apply_live(&in_effect, &reread);
    ck_assert(in_effect.require_noise_source);

    ck_assert_int_eq(parse(&in_effect, "reseed_interval = 30\n"), 0);
    ck_assert_int_eq(parse(&reread, "mode = approved\n"), 0);
    config_apply_live(&in_effect, &reread);
    ck_assert(!in_effect.require_noise_source);
    ck_assert(config_pending_restart(&in_effect, &reread, key_index("mode")));
    ck_assert_int_eq(parse(&reread, "mode = approved\nrequire_noise_source = yes\n"), 0);
    config_apply_live(&in_effect, &reread);
    ck_assert(in_effect.require_noise_source);     /* the file's own yes applies at once */
}
END_TEST

/* A shorter path written over a longer one (--socket over the file's) leaves the longer one's
 * tail behind the terminator: equal paths must still compare equal. */
START_TEST(equal_paths_are_not_pending_whatever_lies_past_their_end)
{
    struct config in_effect, reread;

    config_defaults(&in_effect);
    ck_assert_int_eq(parse(&reread, "socket = /a/much/longer/path/than/the/other\n"), 0);
    strcpy(in_effect.socket, "/s");
    strcpy(reread.socket, "/s");
    ck_assert(!config_pending_restart(&in_effect, &reread, key_index("socket")));
}
END_TEST

START_TEST(values_are_written_as_randd_conf_accepts_them)
{
    /* randen where the CPU can run it: elsewhere it is a config error (below). */
    const char *engine = randd_randen_available() ? "randen" : "cymric";
    struct config c;
    char buf[64], text[160];

    snprintf(text, sizeof(text), "rdseed = off\nreseed_bytes = 16M\nsocket_mode = 0660\n"
                                 "engine = %s\nsocket = /x.sock\n", engine);
    ck_assert_int_eq(parse(&c, text), 0);
    ck_assert_str_eq(config_value_text(&c, key_index("cpu_source"), buf, sizeof(buf)), "false");
    ck_assert_str_eq(config_value_text(&c, key_index("reseed_bytes"), buf, sizeof(buf)),
                     "16777216");
    ck_assert_str_eq(config_value_text(&c, key_index("socket_mode"), buf, sizeof(buf)), "0660");
    ck_assert_str_eq(config_value_text(&c, key_index("engine"), buf, sizeof(buf)), engine);
    ck_assert_str_eq(config_value_text(&c, key_index("socket"), buf, sizeof(buf)), "/x.sock");
    ck_assert_str_eq(config_value_text(&c, key_index("user"), buf, sizeof(buf)), "");
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("parse");

    tcase_add_test(tc, defaults_are_the_documented_ones);
    tcase_add_test(tc, values_comments_and_whitespace_are_parsed);
    tcase_add_test(tc, limits_are_inclusive);
    tcase_add_test(tc, every_error_is_reported_one_a_line);
    tcase_add_test(tc, each_error_names_file_line_and_key);
    tcase_add_test(tc, workers_is_auto_or_a_count_within_its_limits);
    tcase_add_test(tc, max_clients_per_uid_is_auto_or_a_count_and_applies_at_once);
    tcase_add_test(tc, loopback_is_127_slash_8_and_ipv6s_loopback_plain_or_mapped);
    tcase_add_test(tc, overlong_values_and_lines_are_refused);
    tcase_add_test(tc, failed_parse_leaves_the_config_untouched);
    tcase_add_test(tc, missing_file_is_defaults_only_when_allowed);
    tcase_add_test(tc, shipped_config_documents_every_key_with_its_default);
    tcase_add_test(tc, cipher_is_auto_chacha20_or_hardware_aes256ctr);
    tcase_add_test(tc, aes256ctr_without_hardware_aes_is_an_error_with_file_and_line);
    tcase_add_test(tc, randen_without_an_aes_round_is_an_error_with_file_and_line);
    tcase_add_test(tc, approved_mode_takes_a_drbg_and_noise_sources_only);
    tcase_add_test(tc, reload_applies_live_keys_and_leaves_restart_keys_pending);
    tcase_add_test(tc, a_reload_follows_the_mode_in_effect_not_the_files);
    tcase_add_test(tc, equal_paths_are_not_pending_whatever_lies_past_their_end);
    tcase_add_test(tc, values_are_written_as_randd_conf_accepts_them);
    suite_add_tcase(s, tc);
    return s;
}
