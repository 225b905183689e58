# kp - see README
.POSIX:

include config.mk

# The command of one source file, and those in parts behind one header:
# rapl-read's in cmd/rapl, kp-attribute's in cmd/attribute, kp-aggregate's
# in cmd/aggregate, kp-fmt's in cmd/fmt.
CMD1 = cmd/proc-cputime
BIN = cmd/rapl-read $(CMD1) cmd/kp-attribute cmd/kp-aggregate cmd/kp-fmt
RAPLOBJ = cmd/rapl/main.o cmd/rapl/source.o cmd/rapl/powercap.o \
	cmd/rapl/hwmon.o cmd/rapl/model.o cmd/rapl/estimate.o \
	cmd/rapl/modeltable.o cmd/rapl/sample.o cmd/rapl/command.o \
	cmd/rapl/terminal.o cmd/rapl/state.o cmd/rapl/bmc.o cmd/rapl/redfish.o \
	cmd/rapl/ipmi.o cmd/rapl/nvml.o
ATTROBJ = cmd/attribute/main.o cmd/attribute/hold.o cmd/attribute/split.o \
	cmd/attribute/track.o cmd/attribute/state.o
AGGOBJ = cmd/aggregate/main.o cmd/aggregate/levels.o cmd/aggregate/take.o \
	cmd/aggregate/end.o cmd/aggregate/state.o
PROMOBJ = cmd/fmt/prom.o cmd/fmt/promout.o cmd/fmt/families.o \
	cmd/fmt/labels.o cmd/fmt/series.o cmd/fmt/exited.o
FMTOBJ = cmd/fmt/main.o cmd/fmt/block.o cmd/fmt/units.o cmd/fmt/table.o \
	cmd/fmt/rows.o cmd/fmt/top.o cmd/fmt/csv.o cmd/fmt/json.o $(PROMOBJ) \
	cmd/fmt/summary.o cmd/fmt/texts.o cmd/fmt/cmdblock.o cmd/fmt/cmdtree.o cmd/fmt/source.o \
	cmd/fmt/powercap.o
MAN1 = man/rapl-read.1 man/proc-cputime.1 man/kp-attribute.1 man/kp-aggregate.1 man/kp-fmt.1 \
	man/kp-plot.1
MAN5 = man/kp-records.5
# What make install copies besides: the plotting script, the energy log's
# systemd units, the udev rule that lets group power read RAPL.
SCRIPTS = scripts/kp-plot
UNITS = scripts/kp-energy-log.service scripts/kp-energy-log.timer
UDEV = scripts/70-powercap.rules
# lib/: the record protocol every stage speaks; lib/proc/: the engine that
# samples /proc and the cgroups, for the stages that scan them.
PROTOOBJ = lib/alloc.o lib/clock.o lib/energy.o lib/fields.o lib/jsonfile.o \
	lib/liveness.o lib/map.o lib/parse.o lib/prockey.o lib/readfile.o \
	lib/record.o lib/signal.o lib/spool.o lib/state.o lib/usage.o lib/utf8.o \
	lib/write.o lib/zonekey.o lib/zones.o
PROCOBJ = lib/proc/cgroup_counters.o lib/proc/command.o lib/proc/cpuinfo.o \
	lib/proc/drm.o lib/proc/drm_idle.o lib/proc/exec_cgroups.o \
	lib/proc/exit_account.o lib/proc/exit_queue.o lib/proc/exit_taskstats.o \
	lib/proc/gpu.o lib/proc/gpu_nvml.o lib/proc/gpu_table.o lib/proc/identity.o \
	lib/proc/names.o lib/proc/options.o lib/proc/procfs.o \
	lib/proc/proctable.o lib/proc/sampler.o lib/proc/vm_scope.o
# lib/nvml.o: libnvidia-ml, opened at run time, for the GPU's figures.
GPUOBJ = lib/nvml.o
LIBOBJ = $(PROTOOBJ) $(PROCOBJ) $(GPUOBJ)
LIB = lib/libkp.a
# The tests' stand-in for libnvidia-ml.so.1 (tests/nvml-stub.c), in the
# variants of drivers the tests meet: every symbol, no _v3 of the running
# processes, neither _v3 nor _v2.
NVMLSTUB = tests/nvml/full/libnvidia-ml.so.1 \
	tests/nvml/no-v3/libnvidia-ml.so.1 \
	tests/nvml/no-processes/libnvidia-ml.so.1
# Test drivers that make check builds: taskstats' probe, a CPU-time burner,
# a wait4(2) reference, a sampler fed exit facts from its input, the
# process events' parser fed events from its input, lib/nvml.c's GPU time
# per process read from the stub libnvidia-ml, and that stub.
TESTBIN = tests/taskstats-probe tests/cpuburn tests/wait4 tests/facts-replay \
	tests/events-replay tests/nvml-gputime $(NVMLSTUB)

# make SANITIZE=1 builds with AddressSanitizer and UndefinedBehaviorSanitizer,
# with clang (config.mk).
SAN_1 = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
SAN = $(SAN_$(SANITIZE))

all: $(BIN)

$(LIBOBJ): lib/kp.h config.mk
$(PROCOBJ): lib/proc/proc.h
$(GPUOBJ) cmd/rapl/nvml.o: lib/nvml.h
lib/proc/sampler.o lib/proc/exit_account.o lib/proc/proctable.o \
    lib/proc/command.o lib/proc/vm_scope.o: lib/proc/sampler.h
lib/proc/sampler.o lib/proc/gpu.o lib/proc/drm.o lib/proc/drm_idle.o \
    lib/proc/gpu_nvml.o lib/proc/gpu_table.o: lib/proc/gpu.h
lib/proc/gpu_nvml.o: lib/nvml.h
$(CMD1:=.o): lib/kp.h config.mk
cmd/proc-cputime.o: lib/proc/proc.h
$(FMTOBJ): lib/kp.h cmd/fmt/fmt.h config.mk
$(PROMOBJ): cmd/fmt/prom.h
$(ATTROBJ): lib/kp.h lib/proc/proc.h cmd/attribute/attribute.h config.mk
$(AGGOBJ): lib/kp.h cmd/aggregate/aggregate.h config.mk
$(RAPLOBJ): lib/kp.h lib/proc/proc.h cmd/rapl/rapl.h config.mk
cmd/fmt/prom.o: cmd/fmt/build.h
cmd/rapl/redfish.o:
	$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) $(JANSSON_CFLAGS) $(CURL_CFLAGS) -Ilib -c -o $@ cmd/rapl/redfish.c

# The git branch and revision of kp-fmt's kepler_build_info, "unknown"
# outside a git checkout, in characters that need no escaping in C; the
# file is rewritten only when they change, so that kp-fmt is rebuilt then.
cmd/fmt/build.h: FORCE
	@b=`git rev-parse --abbrev-ref HEAD 2>/dev/null | tr -cd 'A-Za-z0-9._/+-'`; \
	r=`git rev-parse HEAD 2>/dev/null | tr -cd '0-9a-f'`; \
	printf '#define BUILD_BRANCH "%s"\n#define BUILD_REVISION "%s"\n' \
	    "$${b:-unknown}" "$${r:-unknown}" > $@.tmp; \
	if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi

.c.o:
	$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) $(JANSSON_CFLAGS) -Ilib -c -o $@ $<

$(LIB): $(LIBOBJ)
	rm -f $@
	$(AR) rcs $@ $(LIBOBJ)

$(BIN): $(LIB)
cmd/proc-cputime: cmd/proc-cputime.o
$(CMD1):
	$(CC) $(CFLAGS) $(SAN) $(LDFLAGS) -o $@ $@.o $(LIB) $(JANSSON_LIBS) -lm
cmd/rapl-read: $(RAPLOBJ)
	$(CC) $(CFLAGS) $(SAN) $(LDFLAGS) -pthread -o $@ $(RAPLOBJ) $(LIB) $(JANSSON_LIBS) $(CURL_LIBS) $(DL_LIBS) -lm
cmd/kp-attribute: $(ATTROBJ)
	$(CC) $(CFLAGS) $(SAN) $(LDFLAGS) -o $@ $(ATTROBJ) $(LIB) $(JANSSON_LIBS) -lm
cmd/kp-aggregate: $(AGGOBJ)
	$(CC) $(CFLAGS) $(SAN) $(LDFLAGS) -o $@ $(AGGOBJ) $(LIB) $(JANSSON_LIBS) -lm
cmd/kp-fmt: $(FMTOBJ)
	$(CC) $(CFLAGS) $(SAN) $(LDFLAGS) -o $@ $(FMTOBJ) $(LIB) $(JANSSON_LIBS) -lm

tests/taskstats-probe.o: lib/kp.h lib/proc/proc.h config.mk
tests/taskstats-probe: tests/taskstats-probe.o $(LIB)
	$(CC) $(CFLAGS) $(SAN) $(LDFLAGS) -pthread -o $@ $@.o $(LIB) $(JANSSON_LIBS) -lm
tests/facts-replay.o: lib/kp.h lib/proc/proc.h config.mk
tests/facts-replay: tests/facts-replay.o $(LIB)
	$(CC) $(CFLAGS) $(SAN) $(LDFLAGS) -o $@ $@.o $(LIB) $(JANSSON_LIBS) -lm
tests/events-replay.o: lib/kp.h lib/proc/proc.h config.mk
tests/events-replay: tests/events-replay.o $(LIB)
	$(CC) $(CFLAGS) $(SAN) $(LDFLAGS) -o $@ $@.o $(LIB) $(JANSSON_LIBS) -lm
tests/nvml-gputime.o: lib/kp.h lib/nvml.h config.mk
tests/nvml-gputime: tests/nvml-gputime.o $(LIB)
	$(CC) $(CFLAGS) $(SAN) $(LDFLAGS) -o $@ $@.o $(LIB) $(JANSSON_LIBS) $(DL_LIBS) -lm
tests/cpuburn: tests/cpuburn.c config.mk
	$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) -o $@ tests/cpuburn.c
tests/wait4: tests/wait4.c config.mk
	$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) -o $@ tests/wait4.c

# Built without the sanitizers, whose runtime a plain shared object lacks.
NVMLSTUB_CFLAGS = -std=c11 -O2 -g -Wall -Wextra -Werror -fPIC -shared \
	-Wl,-soname,libnvidia-ml.so.1
tests/nvml/full/libnvidia-ml.so.1: tests/nvml-stub.c
	mkdir -p tests/nvml/full
	$(CC) $(CPPFLAGS) $(NVMLSTUB_CFLAGS) -o $@ tests/nvml-stub.c
tests/nvml/no-v3/libnvidia-ml.so.1: tests/nvml-stub.c
	mkdir -p tests/nvml/no-v3
	$(CC) $(CPPFLAGS) -DNO_V3 $(NVMLSTUB_CFLAGS) -o $@ tests/nvml-stub.c
tests/nvml/no-processes/libnvidia-ml.so.1: tests/nvml-stub.c
	mkdir -p tests/nvml/no-processes
	$(CC) $(CPPFLAGS) -DNO_PROCESSES $(NVMLSTUB_CFLAGS) -o $@ \
	    tests/nvml-stub.c

check: all $(TESTBIN)
	KP_SANITIZE=$(SANITIZE) bats tests

lint:
	mandoc -Tlint -Wwarning man/*
	shellcheck `grep -ls '^#!.*sh$$' scripts/* scripts/deb/*` tests/*.bash \
	    tests/cron-run.sh .ci/run

# Each scripts/bench-* reports ratios against a baseline it measures itself.
bench: all
	for b in scripts/bench-*; do $$b || exit 1; done

# The model against SPEC's watts, leave-one-out (rapl-read(1), The model).
bench-model: cmd/rapl-read
	scripts/bench-model

# make fuzz: each libFuzzer harness of tests/fuzz (clang) for FUZZ_SECONDS;
# FUZZ_RUNS=N (from the command line or the environment) stops each after
# N executions.
FUZZ_SECONDS = 60
FUZZ = record recordfd procfs cgroup state powercap aggregate attribute aggstate \
	taskstats raplstate attrstate fmt filter jsonscan
fuzz: cmd/fmt/build.h
	scripts/fuzz $(FUZZ_SECONDS) $(FUZZ)

# The units name the programs by their path under /usr/local, which make
# install rewrites to PREFIX's.  Nothing is started, enabled or created
# beyond the files: systemctl, udevadm and groupadd are the README's.
install: all
	mkdir -p $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(MANPREFIX)/man1 \
	    $(DESTDIR)$(MANPREFIX)/man5 $(DESTDIR)$(UNITDIR) $(DESTDIR)$(UDEVDIR)
	cp -f $(BIN) $(SCRIPTS) $(DESTDIR)$(PREFIX)/bin
	cd $(DESTDIR)$(PREFIX)/bin && chmod 755 rapl-read proc-cputime \
	    kp-attribute kp-aggregate kp-fmt kp-plot
	cp -f $(MAN1) $(DESTDIR)$(MANPREFIX)/man1
	cp -f $(MAN5) $(DESTDIR)$(MANPREFIX)/man5
	for u in $(UNITS); do \
	    sed 's|/usr/local/bin/|$(PREFIX)/bin/|g' $$u \
	        >$(DESTDIR)$(UNITDIR)/`basename $$u` || exit 1; \
	done
	cp -f $(UDEV) $(DESTDIR)$(UDEVDIR)
	cd $(DESTDIR)$(MANPREFIX) && chmod 644 man1/rapl-read.1 \
	    man1/proc-cputime.1 man1/kp-attribute.1 man1/kp-aggregate.1 \
	    man1/kp-fmt.1 man1/kp-plot.1 man5/kp-records.5
	cd $(DESTDIR)$(UNITDIR) && chmod 644 kp-energy-log.service kp-energy-log.timer
	chmod 644 $(DESTDIR)$(UDEVDIR)/70-powercap.rules

uninstall:
	cd $(DESTDIR)$(PREFIX)/bin && rm -f rapl-read proc-cputime kp-attribute \
	    kp-aggregate kp-fmt kp-plot
	cd $(DESTDIR)$(MANPREFIX)/man1 && rm -f rapl-read.1 proc-cputime.1 \
	    kp-attribute.1 kp-aggregate.1 kp-fmt.1 kp-plot.1
	rm -f $(DESTDIR)$(MANPREFIX)/man5/kp-records.5
	cd $(DESTDIR)$(UNITDIR) && rm -f kp-energy-log.service kp-energy-log.timer
	rm -f $(DESTDIR)$(UDEVDIR)/70-powercap.rules

# make deb: kp_VERSION_ARCH.deb here, installed with Debian's paths, by
# scripts/deb/build from the control files beside it.
deb: all
	MAKE="$(MAKE)" scripts/deb/build $(VERSION)

clean:
	rm -f $(BIN) $(CMD1:=.o) $(RAPLOBJ) $(ATTROBJ) $(AGGOBJ) $(FMTOBJ) $(LIBOBJ) $(LIB) $(TESTBIN) $(TESTBIN:=.o) \
	    cmd/fmt/build.h kp_*.deb

FORCE:

.PHONY: all check lint bench bench-model fuzz install uninstall deb clean
