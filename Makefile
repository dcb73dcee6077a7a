# randd build: the public librandd (lib/), the internal archive of the daemon's engines
# (internal/), the daemon (daemon/), randctl (randctl/), and the tests.
# Everything built lands in build/. `make V=1` shows the commands; `make -j` is safe.
# `make check` and `make run` first install missing Debian packages (`make deps`).

BUILD   := build
VERSION := 0.1.0
PREFIX  ?= /usr/local
SBINDIR ?= $(PREFIX)/sbin
BINDIR  ?= $(PREFIX)/bin
LIBDIR  ?= $(PREFIX)/lib
INCDIR  ?= $(PREFIX)/include
MANDIR  ?= $(PREFIX)/share/man
SYSCONFDIR ?= /etc
# The target's pkg-config: a cross build names its own (debian/rules passes
# aarch64-linux-gnu-pkg-config for dpkg-buildpackage -a arm64), so flags, libraries and
# OpenSSL's modulesdir are the target's.
PKG_CONFIG ?= pkg-config
UNITDIR ?= $(shell $(PKG_CONFIG) --variable=systemdsystemunitdir systemd 2>/dev/null || echo /lib/systemd/system)
# node_exporter's textfile directory (Debian's), where randd-metrics.service writes randd.prom.
TEXTFILEDIR := /var/lib/prometheus/node-exporter

# check-qemu's guest: QEMU under TCG, busybox for its initramfs (Debian's kernel package is
# downloaded by the test itself, never installed).
QEMU_PACKAGES := qemu-system-x86 busybox-static cpio

# check-arm64's cross build and guest: the arm64 compiler and libraries (multiarch, after
# `dpkg --add-architecture arm64`), and QEMU's aarch64 system emulator. The guest's kernel,
# busybox and openssl come from the archive too (apt-get download), never installed.
ARM64_PACKAGES := gcc-aarch64-linux-gnu qemu-system-arm cpio libc6-dev:arm64 libssl-dev:arm64 \
                  libsystemd-dev:arm64 libcap-dev:arm64 libbz2-dev:arm64 check:arm64

# tests/integration/test_sshd.sh runs an sshd of its own, and skips where there is none.
# `make check` does not install it: on a machine booted by systemd, installing openssh-server
# starts a system sshd on port 22 and enables it for every boot. CI's machines are its own to
# change, so .ci/run installs these first (`make deps-sshd`).
SSH_PACKAGES := openssh-server openssh-client

# Debian 12 packages needed to build and test; `make deps` installs the missing ones. chromium
# renders randctl assess's HTML report in test_report.sh (about 25 s to install here).
DEB_PACKAGES := gcc make pkg-config valgrind gdb libssl-dev libsystemd-dev libcap-dev libbz2-dev \
                check rng-tools5 \
                groff-base systemd ekeyd-egd-linux prometheus stress-ng chromium $(QEMU_PACKAGES)
PKGS         := libcrypto

# pkg-config for the target. A cross build names the target's .pc files and root with
# PKG_CONFIG_LIBDIR and PKG_CONFIG_SYSROOT_DIR (tests/cross/check-cross does), or its own
# PKG_CONFIG (above). Make 4.3 hands command-line variables to recipes but not to $(shell),
# so they are spelt out here: without them this is plain pkg-config, as in a native build.
PKG_CONFIG_CMD = $(if $(PKG_CONFIG_LIBDIR),PKG_CONFIG_LIBDIR='$(PKG_CONFIG_LIBDIR)') \
                 $(if $(PKG_CONFIG_SYSROOT_DIR),PKG_CONFIG_SYSROOT_DIR='$(PKG_CONFIG_SYSROOT_DIR)') \
                 $(PKG_CONFIG)

Q   := $(if $(filter 1,$(V)),,@)
say  = $(if $(Q),@printf '  %-6s %s\n' '$(1)' '$(2)')

# Hardened defaults; callers may add their own CFLAGS/LDFLAGS.
WARN      := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
HARDEN    := -fstack-protector-strong -D_FORTIFY_SOURCE=2 -fno-strict-overflow
CFLAGS    ?= -O2 -g
ALL_CFLAGS = -std=gnu11 -D_GNU_SOURCE $(WARN) $(HARDEN) $(CFLAGS) -Ilib -MMD -MP \
             $(shell $(PKG_CONFIG_CMD) --cflags $(PKGS))
# Everything but the public library may use the internal engines.
INTERNAL_CFLAGS = -Iinternal
LINK_HARD := -Wl,-z,relro,-z,now -Wl,--as-needed
LIBS       = $(shell $(PKG_CONFIG_CMD) --libs $(PKGS))

# --- librandd: the public library -------------------------------------------------
# randd.h's client, the in-process generator, the protocol codec and what they need. The .so
# exports randd.h's functions and nothing else (lib/librandd.map); the rest of lib/ is there
# for the daemon and the tools too, through librandd.a.
LIB_SRC := $(wildcard lib/*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
LIB_SONAME := librandd.so.0
LIB_MAP := lib/librandd.map

# --- the internal archive: the daemon's engines ---------------------------------------
# Cymric, Randen, RNG-BC-8, primes, Montgomery arithmetic, the self-tests and the SP 800-90B
# entropy assessment: linked into randd, randctl (benchmark, assess) and the tests, never
# installed, never part of librandd.
INTERNAL_SRC := $(wildcard internal/*.c)
INTERNAL_OBJ := $(INTERNAL_SRC:%.c=$(BUILD)/%.o)
INTERNAL_LIB := $(BUILD)/librandd-internal.a

# --- randd ------------------------------------------------------------------------
# Every daemon module but main.c goes into an archive the unit tests link against too.
DAEMON_SRC  := $(filter-out daemon/main.c,$(wildcard daemon/*.c))
DAEMON_OBJ  := $(DAEMON_SRC:%.c=$(BUILD)/%.o)
DAEMON_LIB  := $(if $(DAEMON_SRC),$(BUILD)/daemon.a)
DAEMON_PKGS := libcrypto libsystemd libcap
DAEMON_BIN  := $(if $(wildcard daemon/main.c),$(BUILD)/randd)
DAEMON_CFLAGS = $(shell $(PKG_CONFIG_CMD) --cflags $(DAEMON_PKGS))
DAEMON_LIBS   = $(shell $(PKG_CONFIG_CMD) --libs $(DAEMON_PKGS)) -pthread -lm

# --- randctl ----------------------------------------------------------------------
RANDCTL_SRC := $(wildcard randctl/*.c)
RANDCTL_BIN := $(if $(RANDCTL_SRC),$(BUILD)/randctl)

# --- the OpenSSL provider -----------------------------------------------------------
# randd.so: librandd's client code linked in (its PIC objects), so it needs no librandd.so
# at run time, and a version script that exports OSSL_provider_init alone.
PROVIDER     := $(if $(wildcard provider/*.c),$(BUILD)/randd.so)
PROVIDER_OBJ := $(BUILD)/provider/randd_provider.o $(BUILD)/lib/client.o $(BUILD)/lib/protocol.o \
                $(BUILD)/lib/generation.o $(BUILD)/lib/path_check.o $(BUILD)/lib/process_token.o
MODULESDIR  ?= $(shell $(PKG_CONFIG) --variable=modulesdir libcrypto 2>/dev/null || echo $(LIBDIR)/ossl-modules)
DATADIR     ?= $(PREFIX)/share

# --- tests and benchmarks ---------------------------------------------------------
# Unit tests (tests/test_*.c) run no daemon; the end-to-end tests (tests/integration/test_*.c,
# beside the shell ones) start build/randd and drive it over its sockets.
TEST_SRC    := $(wildcard tests/test_*.c)
TEST_BIN    := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
TEST_RUNNER := $(BUILD)/tests/runner.o $(BUILD)/tests/scripted_source.o $(BUILD)/tests/drbg_direct.o
E2E_SRC     := $(wildcard tests/integration/test_*.c)
E2E_BIN     := $(E2E_SRC:tests/%.c=$(BUILD)/tests/%)
CHECK_CFLAGS = $(shell $(PKG_CONFIG_CMD) --cflags check)
CHECK_LIBS   = $(shell $(PKG_CONFIG_CMD) --libs check)
BENCH_BIN   := $(BUILD)/bench-rngbc $(BUILD)/bench-randen $(BUILD)/bench-prime $(if $(DAEMON_SRC),$(BUILD)/bench-cpu-noise)

.PHONY: all lib deps deps-sshd deps-arm64 check check-cross unit-test-programs check-loaded check-qemu check-vmgenid check-arm64 check-systemd test end-to-end unit-test check-asan check-valgrind check-units check-assess-long fuzz fuzz-coverage bench bench-jitter bench-modes bench-approved bench-plot check-stats soak run install uninstall deb deb-arm64 clean
.DELETE_ON_ERROR:
.SECONDARY:

all: lib $(DAEMON_BIN) $(RANDCTL_BIN) $(PROVIDER)

lib: $(BUILD)/librandd.a $(BUILD)/librandd.so $(BUILD)/$(LIB_SONAME) \
     $(BUILD)/librandd-uninstalled.pc $(INTERNAL_LIB)

# Library objects are position-independent so one set serves both the .a and the .so. The
# public library sees lib/ only: it cannot reach into the engines by mistake.
$(BUILD)/lib/%.o: lib/%.c | $(BUILD)/lib/
	$(call say,CC,$<)
	$(Q)$(CC) $(ALL_CFLAGS) -fPIC -c -o $@ $<

$(BUILD)/librandd.a: $(LIB_OBJ)
	$(call say,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(BUILD)/librandd.so: $(LIB_OBJ) $(LIB_MAP)
	$(call say,LD,$@)
	$(Q)$(CC) -shared -Wl,-soname,$(LIB_SONAME) -Wl,--version-script=$(LIB_MAP) $(LINK_HARD) \
	  $(LDFLAGS) -o $@ $(LIB_OBJ) $(LIBS)

# Linking from the build tree: a program linked with -L$(BUILD) -lrandd asks for the soname at
# run time (LD_LIBRARY_PATH=$(BUILD)), and pkg-config prefers librandd-uninstalled.pc, its
# convention for a library not installed, when PKG_CONFIG_PATH=$(BUILD). Neither is installed.
$(BUILD)/$(LIB_SONAME): $(BUILD)/librandd.so
	$(Q)ln -sf librandd.so $@

$(BUILD)/librandd-uninstalled.pc: lib/librandd.pc.in | $(BUILD)/
	$(call say,GEN,$@)
	$(Q)sed -e 's|@PREFIX@|$(abspath .)|' -e 's|@LIBDIR@|$(abspath $(BUILD))|' \
	  -e 's|^includedir=.*|includedir=$${prefix}/lib|' -e 's|@VERSION@|$(VERSION)|' $< >$@

$(BUILD)/internal/%.o: internal/%.c | $(BUILD)/internal/
	$(call say,CC,$<)
	$(Q)$(CC) $(ALL_CFLAGS) $(INTERNAL_CFLAGS) -fPIE -c -o $@ $<

$(INTERNAL_LIB): $(INTERNAL_OBJ)
	$(call say,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(BUILD)/provider/%.o: provider/%.c | $(BUILD)/provider/
	$(call say,CC,$<)
	$(Q)$(CC) $(ALL_CFLAGS) -DRANDD_VERSION='"$(VERSION)"' -fPIC -fvisibility=hidden -c -o $@ $<

$(BUILD)/randd.so: $(PROVIDER_OBJ) provider/randd.map
	$(call say,LD,$@)
	$(Q)$(CC) -shared $(LINK_HARD) -Wl,--no-undefined -Wl,--version-script=provider/randd.map \
	  $(LDFLAGS) -o $@ $(PROVIDER_OBJ) $(LIBS) -pthread

# Everything else is linked into position-independent executables.
$(BUILD)/daemon/%.o: daemon/%.c | $(BUILD)/daemon/
	$(call say,CC,$<)
	$(Q)$(CC) $(ALL_CFLAGS) $(INTERNAL_CFLAGS) $(DAEMON_CFLAGS) -Idaemon -pthread -fPIE -c -o $@ $<

$(BUILD)/cli/%.o: randctl/%.c | $(BUILD)/cli/
	$(call say,CC,$<)
	$(Q)$(CC) $(ALL_CFLAGS) $(INTERNAL_CFLAGS) -DRANDD_VERSION='"$(VERSION)"' -Irandctl -fPIE -c -o $@ $<

# The internal archive for the benchmark's engine figures (Cymric, Randen beside AES).
$(BUILD)/randctl: $(RANDCTL_SRC:randctl/%.c=$(BUILD)/cli/%.o) $(INTERNAL_LIB) $(BUILD)/librandd.a
	$(call say,LD,$@)
	$(Q)$(CC) -pie $(LINK_HARD) $(LDFLAGS) -o $@ $^ $(LIBS) -lbz2 -pthread -lm

$(BUILD)/daemon.a: $(DAEMON_OBJ)
	$(call say,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(BUILD)/randd: $(BUILD)/daemon/main.o $(DAEMON_LIB) $(INTERNAL_LIB) $(BUILD)/librandd.a
	$(call say,LD,$@)
	$(Q)$(CC) -pie $(LINK_HARD) $(LDFLAGS) -o $@ $^ $(DAEMON_LIBS)

$(BUILD)/tests/%.o: tests/%.c | $(BUILD)/tests/ $(BUILD)/tests/bench/ $(BUILD)/tests/stats/ \
                                $(BUILD)/tests/soak/ $(BUILD)/tests/integration/ \
                                $(BUILD)/tests/qemu/
	$(call say,CC,$<)
	$(Q)$(CC) $(ALL_CFLAGS) $(INTERNAL_CFLAGS) $(CHECK_CFLAGS) $(DAEMON_CFLAGS) -Itests -Idaemon -fPIE -c -o $@ $<

$(BUILD)/tests/test_%: $(BUILD)/tests/test_%.o $(TEST_RUNNER) $(DAEMON_LIB) $(INTERNAL_LIB) $(BUILD)/librandd.a
	$(call say,LD,$@)
	$(Q)$(CC) -pie $(LINK_HARD) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(DAEMON_LIBS) -lbz2 -lm

# The end-to-end tests are clients of the daemon: librandd (and the engines' checks), no
# daemon module; tests/integration/harness.c starts the daemon and speaks its protocol.
$(BUILD)/tests/integration/test_%: $(BUILD)/tests/integration/test_%.o $(BUILD)/tests/runner.o \
                                   $(BUILD)/tests/integration/harness.o \
                                   $(INTERNAL_LIB) $(BUILD)/librandd.a
	$(call say,LD,$@)
	$(Q)$(CC) -pie $(LINK_HARD) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LIBS) -pthread -lm

# test_provider dlopens randd.so, as OpenSSL does; tests/integration/test_provider.sh runs
# provider-fork, a client of OpenSSL's RAND_bytes that forks.
$(BUILD)/tests/test_provider: | $(PROVIDER)

$(BUILD)/tests/provider-fork: $(BUILD)/tests/provider_fork.o $(BUILD)/librandd.a
	$(call say,LD,$@)
	$(Q)$(CC) -pie $(LINK_HARD) $(LDFLAGS) -o $@ $^ $(LIBS)

# ... and provider-pr, OpenSSL's HASH-DRBG or CTR-DRBG on randd.so with prediction resistance.
$(BUILD)/tests/provider-pr: $(BUILD)/tests/provider_pr.o $(BUILD)/librandd.a
	$(call say,LD,$@)
	$(Q)$(CC) -pie $(LINK_HARD) $(LDFLAGS) -o $@ $^ $(LIBS)

# tests/integration/test_trust.sh installs a copy of trust-probe setuid root: a client of
# librandd whose environment is a stranger's.
$(BUILD)/tests/trust-probe: $(BUILD)/tests/integration/trust_probe.o $(BUILD)/librandd.a
	$(call say,LD,$@)
	$(Q)$(CC) -pie $(LINK_HARD) $(LDFLAGS) -o $@ $^ $(LIBS)

# check-vmgenid's in-process generator, run in the QEMU guest across a snapshot.
$(BUILD)/tests/rng-client: $(BUILD)/tests/qemu/rng_client.o $(BUILD)/librandd.a
	$(call say,LD,$@)
	$(Q)$(CC) -pie $(LINK_HARD) $(LDFLAGS) -o $@ $^ $(LIBS)

# test_arenas.sh's attacker: holds BYTES_MEMFD replies, and their descriptors, unread.
$(BUILD)/tests/memfd-hoarder: $(BUILD)/tests/integration/memfd_hoarder.o $(BUILD)/librandd.a
	$(call say,LD,$@)
	$(Q)$(CC) -pie $(LINK_HARD) $(LDFLAGS) -o $@ $^ $(LIBS)

# test_fairness.sh's hog and EGD client: holds every connection it can, times EGD reads.
$(BUILD)/tests/fair-hog: $(BUILD)/tests/integration/fair_hog.o $(BUILD)/librandd.a
	$(call say,LD,$@)
	$(Q)$(CC) -pie $(LINK_HARD) $(LDFLAGS) -o $@ $^ $(LIBS)

# test_ordinary_latency.sh's client: times plain BYTES requests from connect to last byte.
$(BUILD)/tests/latency-probe: $(BUILD)/tests/integration/latency_probe.o $(BUILD)/librandd.a
	$(call say,LD,$@)
	$(Q)$(CC) -pie $(LINK_HARD) $(LDFLAGS) -o $@ $^ $(LIBS)

$(BUILD)/bench-rngbc: $(BUILD)/tests/bench/bench_rngbc.o $(INTERNAL_LIB) $(BUILD)/librandd.a
	$(call say,LD,$@)
	$(Q)$(CC) -pie $(LINK_HARD) $(LDFLAGS) -o $@ $^ $(LIBS) -lm

$(BUILD)/bench-randen: $(BUILD)/tests/bench/bench_randen.o $(INTERNAL_LIB) $(BUILD)/librandd.a
	$(call say,LD,$@)
	$(Q)$(CC) -pie $(LINK_HARD) $(LDFLAGS) -o $@ $^ $(LIBS)

$(BUILD)/range-chi2: $(BUILD)/tests/stats/range_chi2.o $(BUILD)/librandd.a
	$(call say,LD,$@)
	$(Q)$(CC) -pie $(LINK_HARD) $(LDFLAGS) -o $@ $^ $(LIBS) -lm

# Fault injection for tests/integration/test_faults.sh, preloaded into the real daemon. Plain
# flags on purpose: it must not need a sanitizer runtime of its own.
$(BUILD)/libfault.so: tests/fault/libfault.c | $(BUILD)/
	$(call say,CC,$<)
	$(Q)$(CC) -shared -fPIC -O2 -Wall -Wextra -Werror -o $@ $< -ldl

$(BUILD)/soak: $(BUILD)/tests/soak/soak.o $(INTERNAL_LIB) $(BUILD)/librandd.a
	$(call say,LD,$@)
	$(Q)$(CC) -pie $(LINK_HARD) $(LDFLAGS) -o $@ $^ $(LIBS) -pthread -lm

$(BUILD)/bench-prime: $(BUILD)/tests/bench/bench_prime.o $(INTERNAL_LIB) $(BUILD)/librandd.a
	$(call say,LD,$@)
	$(Q)$(CC) -pie $(LINK_HARD) $(LDFLAGS) -o $@ $^ $(LIBS) -lm

$(BUILD)/bench-jitter: $(BUILD)/tests/bench/bench_jitter.o $(BUILD)/tests/bench/proc_threads.o \
  $(BUILD)/librandd.a
	$(call say,LD,$@)
	$(Q)$(CC) -pie $(LINK_HARD) $(LDFLAGS) -o $@ $^ $(LIBS)

# Debian's jitterentropy-rngd for bench-jitter's comparison, unpacked, never installed: the
# package would enable a service that feeds the kernel for good. Only the binary comes out:
# its etc/init.d would look like a dependency file to the -include below.
JENT_RNGD := $(BUILD)/bench/jent/usr/sbin/jitterentropy-rngd
$(JENT_RNGD): | $(BUILD)/bench/jent/
	$(Q)cd $(BUILD)/bench/jent && rm -f *.deb && apt-get download -q jitterentropy-rngd 2>/dev/null && \
	  dpkg-deb --fsys-tarfile jitterentropy-rngd_*.deb | tar -x ./usr/sbin/jitterentropy-rngd || \
	  echo "bench: could not fetch jitterentropy-rngd"

$(BUILD)/bench-daemon: $(BUILD)/tests/bench/bench_daemon.o $(BUILD)/tests/bench/proc_threads.o
	$(call say,LD,$@)
	$(Q)$(CC) -pie $(LINK_HARD) $(LDFLAGS) -o $@ $^

$(BUILD)/bench-cpu-noise: $(BUILD)/tests/bench/bench_cpu_noise.o $(DAEMON_LIB) $(INTERNAL_LIB) $(BUILD)/librandd.a
	$(call say,LD,$@)
	$(Q)$(CC) -pie $(LINK_HARD) $(LDFLAGS) -o $@ $^ $(DAEMON_LIBS)

.PRECIOUS: %/
%/:
	$(Q)mkdir -p $@

# --- the two commands ---------------------------------------------------------------
# A package counts as installed for this machine's own architecture (or for all): with other
# architectures added (dpkg --add-architecture, for check-arm64), libssl-dev:arm64 alone must
# not pass for libssl-dev. A name with an architecture (libssl-dev:arm64) asks for that one.
deps:
	@native=$$(dpkg --print-architecture); missing=; for p in $(DEB_PACKAGES); do \
	  case $$p in *:*) want=$${p#*:};; *) want=$$native;; esac; \
	  dpkg-query -W -f='$${Status} $${Architecture}\n' $$p 2>/dev/null | \
	    grep -Eq "ok installed ($$want|all)$$" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	  echo "make deps: installing$$missing"; \
	  $$sudo apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

deps-sshd:
	@$(MAKE) --no-print-directory deps DEB_PACKAGES="$(SSH_PACKAGES)"

# make check runs its test programs TEST_JOBS at a time (tests/run-tests: each one's output
# whole when it ends, then the seconds each took, kept in $(BUILD)/test-times), and builds
# with as many compilers unless make was given its own -j.
TEST_JOBS ?= 2
BUILD_JOBS = $(if $(filter -j% --jobserver%,$(MAKEFLAGS)),,-j$(TEST_JOBS))

# pkg-config flags are read when make starts, so building runs in a fresh make after deps.
check: deps
	@$(MAKE) --no-print-directory $(BUILD_JOBS) test

INTEGRATION := $(wildcard tests/integration/test_*.sh)
# With no times from a last run, the longest start first: the QEMU guest and the soak, then
# the tests that run a daemon, and the unit tests, mostly short, fill in at the end.
TEST_PROGRAMS = "tests/qemu/check-qemu $(BUILD)" \
	"tests/bench/with-daemon $(BUILD) $(BUILD)/soak --seconds $(SOAK_SECONDS_CI)" \
	$(E2E_BIN) $(INTEGRATION) "tests/stats/check-stats $(BUILD) short" $(TEST_BIN)

test: all $(TEST_BIN) $(E2E_BIN) $(BUILD)/range-chi2 $(BUILD)/soak $(BUILD)/libfault.so \
      $(BUILD)/tests/provider-fork $(BUILD)/tests/provider-pr $(BUILD)/tests/trust-probe $(BUILD)/tests/memfd-hoarder \
      $(BUILD)/tests/latency-probe $(BUILD)/tests/fair-hog
	@export RANDD=$(BUILD)/randd RANDCTL=$(BUILD)/randctl LIBFAULT=$(BUILD)/libfault.so \
	  RANDD_PROVIDER=$(BUILD)/randd.so PROVIDER_FORK=$(BUILD)/tests/provider-fork \
	  TRUST_PROBE=$(BUILD)/tests/trust-probe MEMFD_HOARDER=$(BUILD)/tests/memfd-hoarder \
	  LATENCY_PROBE=$(BUILD)/tests/latency-probe FAIR_HOG=$(BUILD)/tests/fair-hog; \
	TEST_JOBS=$(TEST_JOBS) tests/run-tests $(BUILD)/test-times $(TEST_PROGRAMS) && \
	echo "all $(words $(TEST_BIN) $(E2E_BIN) $(INTEGRATION)) test programs passed"

# The tests that run a real daemon (end to end, integration, faults), twice, while stress-ng
# keeps every core busy: a test that passes only because the machine was idle fails here.
# They run TEST_JOBS at a time, as make check runs them, so each has less than a core.
LOADED_RUNS ?= 2
check-loaded: deps
	@$(MAKE) --no-print-directory all $(E2E_BIN) $(BUILD)/libfault.so \
	  $(BUILD)/tests/provider-fork $(BUILD)/tests/provider-pr $(BUILD)/tests/memfd-hoarder $(BUILD)/tests/trust-probe $(BUILD)/tests/latency-probe $(BUILD)/tests/fair-hog
	@stress-ng --cpu 0 --cpu-method all --timeout 3600 --quiet & hog=$$!; \
	trap 'kill $$hog 2>/dev/null; wait $$hog 2>/dev/null' EXIT; \
	for run in $$(seq $(LOADED_RUNS)); do \
	  echo "== check-loaded: run $$run of $(LOADED_RUNS), $$(nproc) CPU hogs beside the tests"; \
	  RANDD_TEST_CPU_HOGS=1 $(MAKE) --no-print-directory end-to-end || exit 1; \
	done; echo "check-loaded: $(LOADED_RUNS) runs passed under load"

end-to-end: all $(E2E_BIN) $(BUILD)/libfault.so $(BUILD)/tests/provider-fork $(BUILD)/tests/provider-pr \
            $(BUILD)/tests/memfd-hoarder $(BUILD)/tests/trust-probe $(BUILD)/tests/latency-probe $(BUILD)/tests/fair-hog
	@export RANDD=$(BUILD)/randd RANDCTL=$(BUILD)/randctl LIBFAULT=$(BUILD)/libfault.so \
	  RANDD_PROVIDER=$(BUILD)/randd.so PROVIDER_FORK=$(BUILD)/tests/provider-fork \
	  TRUST_PROBE=$(BUILD)/tests/trust-probe MEMFD_HOARDER=$(BUILD)/tests/memfd-hoarder \
	  LATENCY_PROBE=$(BUILD)/tests/latency-probe FAIR_HOG=$(BUILD)/tests/fair-hog; \
	TEST_JOBS=$(TEST_JOBS) tests/run-tests $(BUILD)/test-times-end-to-end $(E2E_BIN) $(INTEGRATION)

# A QEMU guest reading /dev/hwrng through randd's EGD socket as docs/egd.md sets it up, paused
# past idle_timeout (tests/qemu/check-qemu): half a minute under TCG, so make check runs it too.
check-qemu: deps
	@$(MAKE) --no-print-directory all
	tests/qemu/check-qemu $(BUILD)

# A VM snapshot restored in two new QEMUs, as clones are (tests/qemu/check-vmgenid): in each,
# randd counts the new VM generation and refuses output until reseeded, and the clones' randd
# and in-process generator output differ. Debian's 6.1 and 6.12 kernels under TCG: 45 s to two
# minutes here (more the first time: it downloads them), so CI runs it (.ci/run), not make check.
check-vmgenid: deps
	@$(MAKE) --no-print-directory all $(BUILD)/tests/rng-client
	tests/qemu/check-vmgenid $(BUILD)

# The arm64 build in an arm64 Debian guest under qemu-system-aarch64 (TCG), booted twice:
# -cpu max (FEAT_RNG: randd's CPU noise source in use) and -cpu neoverse-n1 (none: absent,
# and randd serves all the same); in each, randd's STATUS, and test programs, PASS or FAIL
# each (tests/qemu/check-arm64 says which run where). Cross-built with aarch64-linux-gnu-gcc
# into $(BUILD)/arm64; the guest's kernel is cached in $(BUILD)/arm64-vm. pkg-config must see
# the arm64 .pc files, and make 4.3's shell function sees only the environment, not make's
# own variables: PKG_CONFIG_LIBDIR is set in the environment of the cross build's make. The
# boots cost about 640 and 600 s of QEMU's CPU time, side by side: about 11 minutes on 2 idle
# cores, so CI runs it (.ci/run), not make check.
ARM64_BUILD := $(BUILD)/arm64
ARM64_MAKE   = PKG_CONFIG_LIBDIR=/usr/lib/aarch64-linux-gnu/pkgconfig $(MAKE) -s --no-print-directory \
               BUILD=$(ARM64_BUILD) CC=aarch64-linux-gnu-gcc AR=aarch64-linux-gnu-ar
ARM64_TARGETS = all $(patsubst $(BUILD)/%,$(ARM64_BUILD)/%,$(TEST_BIN) $(E2E_BIN) \
                $(BUILD)/tests/provider-fork $(BUILD)/tests/provider-pr)
deps-arm64:
	@dpkg --print-foreign-architectures | grep -qx arm64 || { \
	  sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	  echo "make deps-arm64: dpkg --add-architecture arm64"; $$sudo dpkg --add-architecture arm64; }
	@$(MAKE) --no-print-directory deps DEB_PACKAGES="$(ARM64_PACKAGES)"

check-arm64: deps-arm64
	@start=$$(date +%s); $(ARM64_MAKE) $(BUILD_JOBS) $(ARM64_TARGETS) && \
	  echo "check-arm64: cross build: $$(($$(date +%s) - start)) s"
	tests/qemu/check-arm64 $(ARM64_BUILD) $(BUILD)/arm64-vm

# The unit test programs built, not run: check-cross runs them under qemu-user.
unit-test-programs: $(TEST_BIN)

unit-test: all $(TEST_BIN)
	@export RANDD_PROVIDER=$(BUILD)/randd.so; for t in $(TEST_BIN); do $$t || exit 1; done

# The whole suite built with AddressSanitizer and UndefinedBehaviorSanitizer, in its own
# build directory; any report fails the run.
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
check-asan: deps
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 RANDD_SANITIZED=1 \
	  $(MAKE) --no-print-directory $(BUILD_JOBS) BUILD=$(BUILD)/asan CFLAGS="-O1 -g $(SAN_FLAGS)" \
	  LDFLAGS="$(SAN_FLAGS)" test

# randd built for ppc64el, s390x (big-endian) and riscv64, and its unit test programs run
# under qemu-user (tests/cross/check-cross): each architecture's Debian libraries unpacked into
# a root of its own under $(BUILD)/cross (bookworm's; trixie's for riscv64), never into the
# host's dpkg; Debian's cross gcc. CROSS_ARCHES picks some (arm64 works too).
CROSS_ARCHES ?= ppc64el s390x riscv64
CROSS_GCC_ppc64el := gcc-powerpc64le-linux-gnu
CROSS_GCC_s390x   := gcc-s390x-linux-gnu
CROSS_GCC_riscv64 := gcc-riscv64-linux-gnu
CROSS_GCC_arm64   := gcc-aarch64-linux-gnu
check-cross:
	@$(MAKE) --no-print-directory deps DEB_PACKAGES="make pkg-config qemu-user-static \
	  $(foreach a,$(CROSS_ARCHES),$(CROSS_GCC_$(a)))"
	tests/cross/check-cross $(BUILD)/cross $(CROSS_ARCHES)

# libFuzzer harnesses (clang), each with its committed seed corpus; new inputs go to a
# working copy under build/fuzz, so the committed corpus only changes on purpose.
FUZZ_SECONDS ?= 30
FUZZ_FLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -std=gnu11 -D_GNU_SOURCE -Ilib -Idaemon -Iinternal
FUZZERS := request config reply provider bzip2_length
# Each harness, then the code it tests. fuzz_provider links the provider's code in, as
# randd.so does, and starts it through OSSL_provider_init.
FUZZ_SOURCES_request  := tests/fuzz/fuzz_request.c lib/protocol.c
FUZZ_SOURCES_config   := tests/fuzz/fuzz_config.c daemon/config.c lib/protocol.c lib/crypto.c lib/aes_ctr.c \
                         internal/randen.c
FUZZ_SOURCES_reply    := tests/fuzz/fuzz_reply.c lib/client.c lib/protocol.c lib/generation.c \
                         lib/path_check.c lib/process_token.c
FUZZ_SOURCES_provider := tests/fuzz/fuzz_provider.c provider/randd_provider.c lib/client.c \
                         lib/protocol.c lib/generation.c lib/path_check.c lib/process_token.c
comma := ,
# Its fake daemon answers in memory, in the harness's thread: the socket calls, the clock, the
# uid, the kernel's generator (the fallback) and the log line of the code under test go through
# it at link time, so lib/client.c and the provider are compiled as shipped.
FUZZ_LIBS_provider    := -pthread $(patsubst %,-Wl$(comma)--wrap=%,socket connect send recv recvmsg \
                         poll close fcntl fstat setsockopt getsockopt clock_gettime \
                         geteuid getrandom write)
# fuzz_bzip2_length checks the count against libbz2 itself, so it links libbz2 too. Its
# inputs are not parsed, so comparison tracing buys nothing and halves the execs a second.
FUZZ_SOURCES_bzip2_length := tests/fuzz/fuzz_bzip2_length.c internal/bzip2_length.c
FUZZ_LIBS_bzip2_length    := -lbz2
$(BUILD)/fuzz/fuzz_request: $(FUZZ_SOURCES_request) | $(BUILD)/fuzz/
	clang $(FUZZ_FLAGS) -o $@ $^
$(BUILD)/fuzz/fuzz_config: $(FUZZ_SOURCES_config) | $(BUILD)/fuzz/
	clang $(FUZZ_FLAGS) -o $@ $^ $(LIBS)
$(BUILD)/fuzz/fuzz_reply: $(FUZZ_SOURCES_reply) | $(BUILD)/fuzz/
	clang $(FUZZ_FLAGS) -o $@ $^ $(LIBS)
$(BUILD)/fuzz/fuzz_provider: $(FUZZ_SOURCES_provider) | $(BUILD)/fuzz/
	clang $(FUZZ_FLAGS) -o $@ $^ $(LIBS) $(FUZZ_LIBS_provider)
$(BUILD)/fuzz/fuzz_bzip2_length: $(FUZZ_SOURCES_bzip2_length) | $(BUILD)/fuzz/
	clang $(FUZZ_FLAGS) -fno-sanitize-coverage=trace-cmp -Iinternal -o $@ $^ $(LIBS) \
	  $(FUZZ_LIBS_bzip2_length)

fuzz: deps
	@$(MAKE) --no-print-directory deps DEB_PACKAGES="clang libclang-rt-14-dev"
	@$(MAKE) --no-print-directory $(BUILD_JOBS) $(FUZZERS:%=$(BUILD)/fuzz/fuzz_%)
	@TEST_JOBS=$(TEST_JOBS) tests/run-tests $(BUILD)/fuzz/times \
	  $(FUZZERS:%="tests/fuzz/run-fuzzer $(BUILD) % $(FUZZ_SECONDS)")

# Source coverage of what the fuzzers reached: each harness rebuilt with clang's coverage
# mapping and run once over its corpus (the working copy make fuzz grew, else the committed
# seeds), then llvm-cov's per-file report of the code under test.
COV_FLAGS := -g -O0 -fprofile-instr-generate -fcoverage-mapping -fsanitize=fuzzer -std=gnu11 \
             -D_GNU_SOURCE -Ilib -Idaemon -Iinternal
# fuzz_coverage NAME: the shell commands for one harness.
fuzz_coverage = bin=$(BUILD)/fuzz/cov/fuzz_$(1); \
	  clang $(COV_FLAGS) -o $$bin $(FUZZ_SOURCES_$(1)) $(LIBS) $(FUZZ_LIBS_$(1)); \
	  corpus=$(BUILD)/fuzz/corpus-$(1); [ -d $$corpus ] || corpus=tests/fuzz/corpus/$(1); \
	  LLVM_PROFILE_FILE=$$bin.profraw $$bin -runs=0 $$corpus >/dev/null 2>&1; \
	  llvm-profdata-14 merge -o $$bin.profdata $$bin.profraw; \
	  echo "== fuzz_$(1) over $$corpus ($$(ls $$corpus | wc -l) inputs)"; \
	  llvm-cov-14 report $$bin -instr-profile=$$bin.profdata $(wordlist 2,9,$(FUZZ_SOURCES_$(1)));
fuzz-coverage: deps
	@$(MAKE) --no-print-directory deps DEB_PACKAGES="clang libclang-rt-14-dev llvm-14"
	@set -e; mkdir -p $(BUILD)/fuzz/cov; $(foreach f,$(FUZZERS),$(call fuzz_coverage,$(f)))

# The integration tests with the daemon under valgrind memcheck (errors or definite leaks
# fail them: the tests require a clean exit on SIGTERM), and test_provider with randd.so in
# valgrind's process (make check runs openssl and provider-fork with it under valgrind too).
check-valgrind: deps
	@$(MAKE) --no-print-directory all $(E2E_BIN) $(BUILD)/tests/test_provider
	@export RANDD=tests/valgrind-randd RANDD_REAL=$(BUILD)/randd RANDCTL=$(BUILD)/randctl \
	  CK_TIMEOUT_MULTIPLIER=4; \
	failed=; for t in $(E2E_BIN) tests/integration/test_randd.sh \
	  tests/integration/test_randctl.sh; do $$t || failed="$$failed $${t##*/}"; done; \
	CK_FORK=no RANDD_PROVIDER=$(BUILD)/randd.so valgrind -q --error-exitcode=99 --leak-check=full \
	  --errors-for-leak-kinds=definite $(BUILD)/tests/test_provider || failed="$$failed test_provider"; \
	if [ -n "$$failed" ]; then echo "FAILED under valgrind:$$failed"; exit 1; fi; \
	echo "integration tests clean under valgrind memcheck"

check-units: all
	tests/integration/test_units.sh

# A kernel log record randd did not read in time may have been the VM fork line: nobody
# overruns the ring (bridge port lines in a user namespace) while randd is stopped. randd
# takes the loss as a possible new VM generation (kmsg_lost.sh) without stopping output
# (kmsg_flood.sh). Not in make check: they write thousands of lines to the shared kernel log.
# Root only.
check-kmsg-lost: all $(BUILD)/tests/latency-probe
	RANDD=$(BUILD)/randd RANDCTL=$(BUILD)/randctl tests/integration/kmsg_lost.sh
	RANDD=$(BUILD)/randd RANDCTL=$(BUILD)/randctl LATENCY_PROBE=$(BUILD)/tests/latency-probe \
	  tests/integration/kmsg_flood.sh

.PHONY: check-kmsg-lost

# SP 800-90B: the assessment of NIST's 1,000,000-sample reference file (ringOsc) against
# ea_non_iid's figures, by the library and by randctl assess (timed); longer than make check
# should take.
check-assess-long: all $(BUILD)/tests/test_entropy_assess
	RANDD_ASSESS_LONG=1 $(BUILD)/tests/test_entropy_assess
	RANDCTL=$(BUILD)/randctl ASSESS_VECTORS="rand1_short rand4_short rand8_short ringOsc-nist" \
	  tests/integration/test_assess.sh

# The .debs under a real systemd: installed into a minimal Debian 12 root (debootstrapped once,
# cached in build/systemd) booted with systemd-nspawn; boot order, notify, reload, watchdog,
# socket activation, hardening, EGD sockets, metrics timer, poweroff. Root only.
check-systemd: deb
	@$(MAKE) --no-print-directory deps DEB_PACKAGES="debootstrap systemd-container"
	tests/system/check-systemd.sh $(BUILD)

# The image docs/containers.md's recipe names, from Containerfile, with no registry: a Debian
# 12 minbase root with openssl (debootstrapped from the archive once, cached in
# $(BUILD)/containers) and make install under /usr, put in the build context $(BUILD)/image.
# Units go under /usr too: the Containerfile's COPY would replace the base's /lib symlink
# with a directory. Root only (debootstrap; the image is rootful podman's).
IMAGE ?= localhost/randd:latest
IMAGE_SUITE := bookworm
IMAGE_BASE := $(BUILD)/containers/$(IMAGE_SUITE)-minbase-openssl.tar
DEBIAN_MIRROR ?= http://deb.debian.org/debian
IMAGE_MULTIARCH = $(shell dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || $(CC) -print-multiarch)
.PHONY: image
image: all
	@$(MAKE) --no-print-directory deps DEB_PACKAGES="debootstrap podman"
	@$(MAKE) --no-print-directory $(IMAGE_BASE)
	$(call say,IMAGE,$(IMAGE))
	$(Q)rm -rf $(BUILD)/image && mkdir -p $(BUILD)/image && \
	  { ln -f $(IMAGE_BASE) $(BUILD)/image/base.tar 2>/dev/null || cp $(IMAGE_BASE) $(BUILD)/image/base.tar; }
	$(Q)$(MAKE) --no-print-directory -s install DESTDIR=$(abspath $(BUILD))/image/install \
	  PREFIX=/usr LIBDIR=/usr/lib/$(IMAGE_MULTIARCH) MODULESDIR=/usr/lib/$(IMAGE_MULTIARCH)/ossl-modules \
	  UNITDIR=/usr/lib/systemd/system SYSCONFDIR=/etc >$(BUILD)/image/install.log 2>&1 || \
	  { cat $(BUILD)/image/install.log; exit 1; }
	$(Q)outside=$$(ls $(BUILD)/image/install | grep -vxE 'usr|etc|var'); [ -z "$$outside" ] || \
	  { echo "make image: the install tree has $$outside outside usr, etc and var"; exit 1; }
	$(Q)podman build -q -f Containerfile -t $(IMAGE) $(BUILD)/image >/dev/null
	@echo "make image: $(IMAGE) (Debian $(IMAGE_SUITE) minbase, openssl, make install under /usr)"

$(IMAGE_BASE): | $(BUILD)/containers/
	$(call say,DEBOOTSTRAP,$(IMAGE_SUITE) minbase with openssl from $(DEBIAN_MIRROR))
	$(Q)rm -rf $(BUILD)/containers/debootstrap
	$(Q)debootstrap --variant=minbase --include=openssl $(IMAGE_SUITE) $(BUILD)/containers/debootstrap \
	  $(DEBIAN_MIRROR) >$(BUILD)/containers/debootstrap.log 2>&1 || \
	  { echo "debootstrap failed:"; tail -20 $(BUILD)/containers/debootstrap.log; exit 1; }
	$(Q)tar -C $(BUILD)/containers/debootstrap -cf $@.tmp . && mv $@.tmp $@ && \
	  rm -rf $(BUILD)/containers/debootstrap

# docs/containers.md's recipe, tested: a randd on the host, its socket's directory mounted
# read-only into podman containers, rootful and rootless (run by nobody), from the image
# make image builds (tagged apart, so a developer's localhost/randd is left alone). Root
# only; skipped with one line where podman cannot run.
.PHONY: check-containers
check-containers: all
	@$(MAKE) --no-print-directory deps DEB_PACKAGES="debootstrap podman runc busybox-static file"
	@RANDD=$(BUILD)/randd RANDCTL=$(BUILD)/randctl tests/system/check-containers.sh $(BUILD)

# The shipped config (every key at its default) and a socket under build/, so no root needed.
run: deps
	@$(MAKE) --no-print-directory all
	$(BUILD)/randd --foreground --config conf/randd.conf --socket $(abspath $(BUILD))/randd.sock

bench: deps
	@$(MAKE) --no-print-directory all $(BENCH_BIN) $(BUILD)/bench-daemon $(BUILD)/bench-jitter
	@$(MAKE) --no-print-directory $(JENT_RNGD)
	@set -e; for b in $(BENCH_BIN); do $$b; echo; done
	-$(BUILD)/bench-prime --no-ifma    # without IFMA, on any CPU; its 4096-bit margin is thin
	$(BUILD)/bench-jitter $(BUILD)/randd $(JENT_RNGD)
	RANDD=$(BUILD)/randd $(BUILD)/bench-daemon
	tests/bench/bench-assess $(BUILD)/randctl
	tests/bench/bench-restart.sh $(BUILD)/randctl

# The statistical batteries over daemon output (rngtest 1M blocks, dieharder -a, ent on
# 256 MiB, RANGE chi-square per byte position): an hour or more. `make check` runs the short
# version (rngtest on 2,000 blocks, a smaller RANGE chi-square).
check-stats: deps
	@$(MAKE) --no-print-directory deps DEB_PACKAGES="dieharder ent"
	@$(MAKE) --no-print-directory all $(BUILD)/range-chi2
	tests/stats/check-stats $(BUILD) full

# Load and abuse for SOAK_SECONDS (10 minutes): 64 clients mixing every op, malformed frames,
# silent, trickling, never-reading and hanging-up clients; RSS flat, no descriptor leak, STATUS
# adding up.
# make check runs it for SOAK_SECONDS_CI.
SOAK_SECONDS ?= 600
SOAK_SECONDS_CI ?= 30
soak: deps
	@$(MAKE) --no-print-directory all $(BUILD)/soak
	tests/bench/with-daemon $(BUILD) $(BUILD)/soak --seconds $(SOAK_SECONDS)

# randd's jitter source beside jitterentropy-rngd: CPU time per credited bit, and full-entropy
# bytes per CPU-second (tests/bench/bench_jitter.c). Part of make bench too.
bench-jitter: all $(BUILD)/bench-jitter $(JENT_RNGD)
	$(BUILD)/bench-jitter $(BUILD)/randd $(JENT_RNGD)

# The prediction-resistant and full-entropy rows of randctl benchmark, with a daemon for each
# noise source the machine has (tests/bench/bench-modes), as CSV.
bench-modes: all
	tests/bench/bench-modes $(BUILD) --seconds 2

# Approved mode beside the default (issue 40): randctl benchmark against a randd in each mode
# with the same sources, three rounds in turns, and a table of medians with approved/default
# (tests/bench/bench-approved). BENCH_APPROVED_SECONDS: randctl benchmark's --seconds.
BENCH_APPROVED_SECONDS ?= 0.5
bench-approved: all
	tests/bench/bench-approved $(BUILD) --seconds $(BENCH_APPROVED_SECONDS)

# randctl benchmark against a daemon of its own, as CSV, drawn by gnuplot: throughput against
# request size for every method (build/bench/benchmark.png).
bench-plot: deps
	@$(MAKE) --no-print-directory deps DEB_PACKAGES=gnuplot-nox
	@$(MAKE) --no-print-directory all
	@mkdir -p $(BUILD)/bench
	tests/bench/with-daemon $(BUILD) $(BUILD)/randctl benchmark --csv >$(BUILD)/bench/benchmark.csv
	gnuplot -e "csv='$(BUILD)/bench/benchmark.csv'; png='$(BUILD)/bench/benchmark.png'" tests/bench/plot.gp
	@echo "bench-plot: $(BUILD)/bench/benchmark.png (data: $(BUILD)/bench/benchmark.csv)"

# --- install -------------------------------------------------------------------------
# The unit's ExecStart follows SBINDIR; /etc/randd.conf is never overwritten. randd.so goes
# where OpenSSL looks for providers: MODULESDIR, OpenSSL's own whatever the PREFIX.
install: all
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig \
	  $(DESTDIR)$(INCDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSCONFDIR) \
	  $(DESTDIR)$(MODULESDIR) $(DESTDIR)$(DATADIR)/randd $(DESTDIR)$(DATADIR)/randd/prometheus \
	  $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(MANDIR)/man5 \
	  $(DESTDIR)$(MANDIR)/man7 $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(TEXTFILEDIR)
	install -m 755 $(BUILD)/randd $(DESTDIR)$(SBINDIR)/randd
	install -m 755 $(BUILD)/randctl $(DESTDIR)$(BINDIR)/randctl
	install -m 644 $(BUILD)/librandd.so $(DESTDIR)$(LIBDIR)/librandd.so.$(VERSION)
	ln -sf librandd.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(LIB_SONAME)
	ln -sf $(LIB_SONAME) $(DESTDIR)$(LIBDIR)/librandd.so
	install -m 644 $(BUILD)/librandd.a $(DESTDIR)$(LIBDIR)/librandd.a
	install -m 644 lib/randd.h $(DESTDIR)$(INCDIR)/randd.h
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@VERSION@|$(VERSION)|' \
	  lib/librandd.pc.in >$(DESTDIR)$(LIBDIR)/pkgconfig/librandd.pc
	sed 's|/usr/sbin/randd|$(SBINDIR)/randd|' systemd/randd.service >$(DESTDIR)$(UNITDIR)/randd.service
	install -m 644 systemd/randd.socket systemd/randd-egd.socket $(DESTDIR)$(UNITDIR)/
	sed 's|/usr/bin/randctl|$(BINDIR)/randctl|' systemd/randd-metrics.service \
	  >$(DESTDIR)$(UNITDIR)/randd-metrics.service
	install -m 644 systemd/randd-metrics.timer $(DESTDIR)$(UNITDIR)/
	[ -e $(DESTDIR)$(SYSCONFDIR)/randd.conf ] || install -m 644 conf/randd.conf $(DESTDIR)$(SYSCONFDIR)/randd.conf
	install -m 644 man/randctl.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 644 man/librandd.3 $(DESTDIR)$(MANDIR)/man3/
	install -m 644 man/randd.conf.5 $(DESTDIR)$(MANDIR)/man5/
	install -m 644 man/randd.8 $(DESTDIR)$(MANDIR)/man8/
	install -m 644 $(BUILD)/randd.so $(DESTDIR)$(MODULESDIR)/randd.so
	install -m 644 conf/openssl-randd.cnf $(DESTDIR)$(DATADIR)/randd/openssl-randd.cnf
	install -m 644 prometheus/randd-rules.yml $(DESTDIR)$(DATADIR)/randd/prometheus/
	install -m 644 man/randd-provider.7 $(DESTDIR)$(MANDIR)/man7/

# Leaves /etc/randd.conf: it is the operator's.
uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/randd $(DESTDIR)$(BINDIR)/randctl \
	  $(DESTDIR)$(LIBDIR)/librandd.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(LIB_SONAME) \
	  $(DESTDIR)$(LIBDIR)/librandd.so $(DESTDIR)$(LIBDIR)/librandd.a \
	  $(DESTDIR)$(LIBDIR)/pkgconfig/librandd.pc $(DESTDIR)$(INCDIR)/randd.h \
	  $(DESTDIR)$(UNITDIR)/randd.service $(DESTDIR)$(UNITDIR)/randd.socket \
	  $(DESTDIR)$(UNITDIR)/randd-egd.socket $(DESTDIR)$(UNITDIR)/randd-metrics.service \
	  $(DESTDIR)$(UNITDIR)/randd-metrics.timer \
	  $(DESTDIR)$(MANDIR)/man1/randctl.1 $(DESTDIR)$(MANDIR)/man3/librandd.3 \
	  $(DESTDIR)$(MANDIR)/man5/randd.conf.5 $(DESTDIR)$(MANDIR)/man8/randd.8 \
	  $(DESTDIR)$(MODULESDIR)/randd.so $(DESTDIR)$(DATADIR)/randd/openssl-randd.cnf \
	  $(DESTDIR)$(DATADIR)/randd/prometheus/randd-rules.yml \
	  $(DESTDIR)$(MANDIR)/man7/randd-provider.7

# --- packages --------------------------------------------------------------------------
# Builds from a copy of the tracked sources with packaging/debian as debian/, then lintian.
DEB_TOOLS := debhelper dpkg-dev fakeroot lintian
# $(call deb_build,DIR,OPTIONS,ENV): the copy in DIR/randd-VERSION, dpkg-buildpackage with
# OPTIONS and ENV, the .debs in DIR, and lintian's verdict on them (any error fails).
define deb_build
	rm -rf $(1) && mkdir -p $(1)/randd-$(VERSION)
	git ls-files -z | xargs -0 tar -cf - | tar -C $(1)/randd-$(VERSION) -xf -
	cp -r packaging/debian $(1)/randd-$(VERSION)/debian
	cd $(1)/randd-$(VERSION) && $(3) dpkg-buildpackage -us -uc -b -J$(TEST_JOBS) $(2)
	lintian --fail-on error $(1)/*.changes
endef

deb: deps
	@$(MAKE) --no-print-directory deps DEB_PACKAGES="$(DEB_TOOLS)"
	$(call deb_build,$(BUILD)/deb)
	@for d in $(BUILD)/deb/*.deb; do echo "== $$d"; dpkg -c $$d; done

# The same packages cross-built for arm64 in $(BUILD)/deb-arm64: Debian's cross gcc and the
# arm64 -dev packages (multiarch: their versions are the amd64 ones'), tests not built
# (nocheck: they are arm64 programs), the same lintian gate, then every ELF file checked to
# be aarch64 and every package to say Architecture: arm64.
DEB_CROSS_DEPS := libssl-dev libsystemd-dev libcap-dev libbz2-dev pkg-config
deb-arm64:
	@dpkg --print-foreign-architectures | grep -qx arm64 || \
	  { sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; $$sudo dpkg --add-architecture arm64; }
	@$(MAKE) --no-print-directory deps \
	  DEB_PACKAGES="$(DEB_TOOLS) file crossbuild-essential-arm64 $(DEB_CROSS_DEPS:%=%:arm64)"
	$(call deb_build,$(BUILD)/deb-arm64,-a arm64 -Pnocheck,DEB_BUILD_OPTIONS=nocheck CC=aarch64-linux-gnu-gcc)
	packaging/check-deb-arch arm64 'ARM aarch64' $(BUILD)/deb-arm64/*.deb

clean:
	rm -rf $(BUILD)

# Not under build/systemd: check-systemd's container root has directories named *.d.
# Nor under build/cross: other architectures' roots and builds, each with a make of its own.
# Nor under build/containers and build/image: make image's Debian root and install tree.
-include $(shell find $(BUILD) \( -path $(BUILD)/systemd -o -path $(BUILD)/cross -o \
                 -path $(BUILD)/containers -o -path $(BUILD)/image \) -prune -o \
                 -name '*.d' -type f -print 2>/dev/null)
