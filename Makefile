# kp - see README
.POSIX:

include config.mk

BIN = cmd/rapl-read cmd/proc-cputime cmd/kp-attribute cmd/kp-aggregate cmd/kp-fmt
MAN1 = man/rapl-read.1 man/proc-cputime.1 man/kp-attribute.1 man/kp-aggregate.1 man/kp-fmt.1
MAN5 = man/kp-records.5
LIBOBJ = lib/alloc.o lib/cgroup.o lib/clock.o lib/map.o lib/parse.o lib/procfs.o lib/record.o \
	lib/sampler.o lib/state.o lib/stream.o lib/utf8.o lib/write.o lib/zones.o
LIB = lib/libkp.a

# make SANITIZE=1 builds with AddressSanitizer and UndefinedBehaviorSanitizer.
SAN_1 = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
SAN = $(SAN_$(SANITIZE))

all: $(BIN)

$(LIBOBJ): lib/kp.h config.mk
$(BIN:=.o): lib/kp.h config.mk

.c.o:
	$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) $(JANSSON_CFLAGS) -Ilib -c -o $@ $<

$(LIB): $(LIBOBJ)
	rm -f $@
	$(AR) rcs $@ $(LIBOBJ)

$(BIN): $(LIB)
cmd/rapl-read: cmd/rapl-read.o
cmd/proc-cputime: cmd/proc-cputime.o
cmd/kp-attribute: cmd/kp-attribute.o
cmd/kp-aggregate: cmd/kp-aggregate.o
cmd/kp-fmt: cmd/kp-fmt.o
$(BIN):
	$(CC) $(CFLAGS) $(SAN) $(LDFLAGS) -o $@ $@.o $(LIB) $(JANSSON_LIBS) -lm

check: all
	KP_SANITIZE=$(SANITIZE) bats tests

lint:
	mandoc -Tlint -Wwarning man/*
	shellcheck `grep -l '^#!.*sh$$' scripts/*` tests/*.bash .ci/run

# Each scripts/bench-* reports ratios against a baseline it measures itself.
bench: all
	for b in scripts/bench-*; do $$b || exit 1; done

# make fuzz: each libFuzzer harness of tests/fuzz (clang) for FUZZ_SECONDS.
FUZZ_SECONDS = 60
FUZZ = record
fuzz:
	scripts/fuzz $(FUZZ_SECONDS) $(FUZZ)

install: all
	mkdir -p $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(MANPREFIX)/man1 $(DESTDIR)$(MANPREFIX)/man5
	cp -f $(BIN) $(DESTDIR)$(PREFIX)/bin
	cp -f $(MAN1) $(DESTDIR)$(MANPREFIX)/man1
	cp -f $(MAN5) $(DESTDIR)$(MANPREFIX)/man5

uninstall:
	cd $(DESTDIR)$(PREFIX)/bin && rm -f rapl-read proc-cputime kp-attribute kp-aggregate kp-fmt
	cd $(DESTDIR)$(MANPREFIX)/man1 && rm -f rapl-read.1 proc-cputime.1 kp-attribute.1 kp-aggregate.1 kp-fmt.1
	rm -f $(DESTDIR)$(MANPREFIX)/man5/kp-records.5

clean:
	rm -f $(BIN) $(BIN:=.o) $(LIBOBJ) $(LIB)

.PHONY: all check lint bench fuzz install uninstall clean
