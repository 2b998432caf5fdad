# floe -- one non-recursive Makefile. `make`, `make test`, `make demo`.
B	?= build
PKGS	 = libevent libevent_openssl libcurl jansson lmdb openssl inih \
	   libbsd-overlay
CFLAGS	?= -O2 -g
WFLAGS	 = -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wformat=2 -Wshadow \
	   -Wpointer-arith -Wcast-qual -Wwrite-strings -Wstrict-prototypes \
	   -Wmissing-prototypes -Wmissing-declarations -Wundef -Wvla \
	   -Wimplicit-fallthrough -Wdeclaration-after-statement
ifdef SAN
B	 = build-san
CFLAGS	 = -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	   -fno-omit-frame-pointer
LDFLAGS	+= -fsanitize=address,undefined
endif
# llhttp, the HTTP/1.1 parser, comes as C sources (Debian's node-llhttp,
# installed by `make deps`) and is built here, beside floe.
LLHTTP_SRC ?= /usr/share/llhttp
LLHTTP_INC ?= /usr/share/include/llhttp
CPPFLAGS += -I. -I$(LLHTTP_INC) -MMD -MP \
	    $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LDLIBS	 += $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lm

# Every .c of a folder is part of it; main.c and floectl.c hold the mains
# (proxy/main_*.c are parts of floe's main, linked into floe alone).
LIB_SRCS  = $(wildcard lib/*.c)
CORE_SRCS = $(wildcard routing/*.c policy/*.c cache/*.c) \
	    $(filter-out proxy/main.c proxy/main_%.c,$(wildcard proxy/*.c))
MAIN_SRCS = proxy/main.c $(wildcard proxy/main_*.c)
CTL_SRCS  = $(wildcard ctl/*.c)
UNIT_SRCS = $(wildcard tests/unit/test_*.c)
# Fixtures several unit tests link (named in their T_X); not binaries.
UNIT_FX	  = $(wildcard tests/unit/*_fx.c tests/unit/*_fx.h)
HDRS	  = $(wildcard lib/*.h proxy/*.h routing/*.h policy/*.h cache/*.h ctl/*.h)

obj	= $(patsubst %.c,$(B)/%.o,$(1))
LIBFLOE	= $(B)/libfloe.a
LLHTTP_OBJS = $(B)/llhttp/api.o $(B)/llhttp/http.o $(B)/llhttp/llhttp.o
UNITS	= $(patsubst tests/unit/%.c,$(B)/tests/%,$(UNIT_SRCS))

all: $(B)/floe $(B)/floectl

# The version: `git describe` of a checkout, else a source tarball's
# VERSION file, else "unknown". Only lib/version.o is compiled with it;
# $(B)/version holds the last one built, rewritten only when it changes.
VERSION := $(or $(shell { test -e .git && git describe --always --dirty \
	   2>/dev/null; } || head -n 1 VERSION 2>/dev/null | \
	   tr -cd 'A-Za-z0-9._+~-'),unknown)
$(B)/version: FORCE
	@mkdir -p $(@D)
	@echo '$(VERSION)' | cmp -s - $@ || echo '$(VERSION)' >$@
$(B)/lib/version.o: $(B)/version
$(B)/lib/version.o: CPPFLAGS += -DFLOE_VERSION='"$(VERSION)"'
version:
	@echo '$(VERSION)'

$(B)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(WFLAGS) $(CFLAGS) -c -o $@ $<

# llhttp's generated code is not held to floe's warnings.
$(B)/llhttp/%.o: $(LLHTTP_SRC)/%.c
	@mkdir -p $(@D)
	$(CC) -I$(LLHTTP_INC) $(CFLAGS) -w -c -o $@ $<

$(LIBFLOE): $(call obj,$(CORE_SRCS) $(LIB_SRCS)) $(LLHTTP_OBJS)
	rm -f $@ && $(AR) rcs $@ $^

$(B)/floe: $(call obj,$(MAIN_SRCS)) $(LIBFLOE)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(B)/floectl: $(call obj,$(CTL_SRCS)) $(LIBFLOE)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# A unit test links its module and lib/ only: tests/unit/test_X.mk sets
# T_X to the sources it needs (default: none beyond lib/).
-include $(wildcard tests/unit/*.mk)
.SECONDEXPANSION:
$(B)/tests/test_%: $(B)/tests/unit/test_%.o $$(call obj,$$(T_$$*)) \
    $(call obj,$(LIB_SRCS)) $(LLHTTP_OBJS)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(shell pkg-config --libs cmocka)

units: $(UNITS)

# Install what the tests need, build, run unit + integration + e2e. The
# build is a second make: this one read llhttp's source folder before
# `deps` could install it. It runs a job per CPU unless make was given
# -j (whose jobs it then shares).
JOBS	?= $(if $(findstring -j,$(MAKEFLAGS)),,-j$(shell nproc 2>/dev/null || echo 1))
test: deps
	$(MAKE) $(JOBS) all units
	tests/run.sh $(B)

check:
	$(MAKE) $(JOBS) SAN=1 all units
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 tests/run.sh build-san

valgrind: units
	tests/run.sh --valgrind $(B)

deps:
	tests/deps.sh

# Each demo starts clean (var/ removed; DEMO_KEEP=1 keeps it).
demo: deps
	$(MAKE) all
	conf/demo.sh $(B)

demo-reset:
	conf/demo.sh --reset

# Cluster mode: etcd, the two catalogs and three floe nodes (conf/).
demo-cluster: deps
	$(MAKE) all
	conf/demo-cluster.sh $(B)

bench: deps
	$(MAKE) all
	bench/run.sh $(B)

# The cost of a SigV4 signature, alone: `make $(B)/bench-sigv4`.
$(B)/bench-sigv4: $(B)/bench/sigv4.o $(call obj,policy/sigv4.c $(LIB_SRCS))
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The cost of the JSON check alone: `bench/jscheck.sh` (or
# `make $(B)/bench-jscheck` and `$(B)/bench-jscheck FILE...`).
$(B)/bench-jscheck: $(B)/bench/jscheck.o $(call obj,$(LIB_SRCS))
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

hdrcheck:
	@for h in $(HDRS); do \
		echo "#include \"$$h\"" | $(CC) $(filter-out -MMD -MP,$(CPPFLAGS)) $(WFLAGS) \
		    -x c -fsyntax-only - || exit 1; done; echo "headers ok"

format:
	clang-format -i $(LIB_SRCS) $(CORE_SRCS) $(MAIN_SRCS) $(CTL_SRCS) \
	    $(UNIT_SRCS) $(UNIT_FX) $(HDRS)

# The floors (tests/floors.sh: no include goes up a floor, no loop), the
# man pages (mandoc -Tlint must say nothing; run from man/, where it finds
# the pages they refer to, with MANPATH there too, so that a floe package
# installed on the machine does not make mandoc compare them with the
# system's database; while a floe package is being installed by a test,
# mandoc may still say the system's mandoc.db is outdated, which is about
# the machine, not the pages, and is left out), then the format.
MANPAGES = floe.8 floectl.8 floe.conf.5
lint:
	tests/floors.sh
	@out=$$(cd man && MANPATH=$$PWD mandoc -Tlint $(MANPAGES) 2>&1 | \
	    grep -v '^mandoc: outdated mandoc.db lacks .* entry, run makewhatis'); \
	    if [ -n "$$out" ]; then echo "$$out"; exit 1; fi; \
	    echo "man pages ok: mandoc -Tlint $(MANPAGES)"
	clang-format --dry-run -Werror $(LIB_SRCS) $(CORE_SRCS) $(MAIN_SRCS) \
	    $(CTL_SRCS) $(UNIT_SRCS) $(UNIT_FX) $(HDRS)

# --- install: `make install` (PREFIX=/usr/local, DESTDIR, sysconfdir, ...)
# The binaries, the man pages, the systemd unit and the bash completion;
# floe.conf with the paths the unit provides, as an example under docdir
# and as $(sysconfdir)/floe/floe.conf unless that exists (an operator's
# file is never overwritten); the Prometheus rules when there are some.
# `make uninstall` removes what install put, and floe.conf only while it
# is still the example.
PREFIX	?= /usr/local
prefix = $(PREFIX)
sbindir = $(prefix)/sbin
datarootdir = $(prefix)/share
mandir = $(datarootdir)/man
docdir = $(datarootdir)/doc/floe
sysconfdir = $(if $(filter /usr,$(prefix)),/etc,$(prefix)/etc)
systemdunitdir = $(prefix)/lib/systemd/system
bashcompdir = $(datarootdir)/bash-completion/completions
rulesdir = $(datarootdir)/floe/prometheus
# Where the unit puts floe's socket, state and logs (RuntimeDirectory,
# StateDirectory, LogsDirectory); the installed floe.conf names them.
# These are set with "=", not "?=": the environment (the tests export
# FLOE_LOGDIR) never changes them; a make command line still may.
FLOE_RUNDIR = /run/floe
FLOE_STATEDIR = /var/lib/floe
FLOE_LOGDIR = /var/log/floe
INSTALL	?= install
RULES	 = $(wildcard conf/prometheus/*.yml)

$(B)/floe.conf: conf/floe.conf FORCE
	@mkdir -p $(@D)
	sed -e 's|^admin_socket = var/floe.sock$$|admin_socket = $(FLOE_RUNDIR)/floe.sock|' \
	    -e 's|^state_dir = var/state$$|state_dir = $(FLOE_STATEDIR)|' \
	    -e 's|^rollback_log = var/log/rollback.log$$|rollback_log = $(FLOE_LOGDIR)/rollback.log|' \
	    $< >$@

$(B)/floe.service: packaging/floe.service FORCE
	@mkdir -p $(@D)
	sed -e 's|/usr/sbin/floe|$(sbindir)/floe|g' \
	    -e 's|/etc/floe/floe.conf|$(sysconfdir)/floe/floe.conf|g' $< >$@

install: all $(B)/floe.conf $(B)/floe.service
	$(INSTALL) -d $(DESTDIR)$(sbindir) $(DESTDIR)$(mandir)/man5 \
	    $(DESTDIR)$(mandir)/man8 $(DESTDIR)$(docdir) \
	    $(DESTDIR)$(sysconfdir)/floe $(DESTDIR)$(systemdunitdir) \
	    $(DESTDIR)$(bashcompdir)
	$(INSTALL) -m 755 $(B)/floe $(B)/floectl $(DESTDIR)$(sbindir)/
	$(INSTALL) -m 644 man/floe.8 man/floectl.8 $(DESTDIR)$(mandir)/man8/
	$(INSTALL) -m 644 man/floe.conf.5 $(DESTDIR)$(mandir)/man5/
	$(INSTALL) -m 644 $(B)/floe.conf $(DESTDIR)$(docdir)/floe.conf.example
	test -e $(DESTDIR)$(sysconfdir)/floe/floe.conf || \
	    $(INSTALL) -m 644 $(B)/floe.conf $(DESTDIR)$(sysconfdir)/floe/floe.conf
	$(INSTALL) -m 644 $(B)/floe.service $(DESTDIR)$(systemdunitdir)/floe.service
	$(INSTALL) -m 644 packaging/floectl.bash-completion \
	    $(DESTDIR)$(bashcompdir)/floectl
ifneq ($(RULES),)
	$(INSTALL) -d $(DESTDIR)$(rulesdir)
	$(INSTALL) -m 644 $(RULES) $(DESTDIR)$(rulesdir)/
endif

uninstall:
	rm -f $(DESTDIR)$(sbindir)/floe $(DESTDIR)$(sbindir)/floectl \
	    $(DESTDIR)$(mandir)/man8/floe.8 $(DESTDIR)$(mandir)/man8/floectl.8 \
	    $(DESTDIR)$(mandir)/man5/floe.conf.5 \
	    $(DESTDIR)$(systemdunitdir)/floe.service \
	    $(DESTDIR)$(bashcompdir)/floectl \
	    $(addprefix $(DESTDIR)$(rulesdir)/,$(notdir $(RULES)))
	if cmp -s $(DESTDIR)$(docdir)/floe.conf.example \
	    $(DESTDIR)$(sysconfdir)/floe/floe.conf; then \
		rm -f $(DESTDIR)$(sysconfdir)/floe/floe.conf; \
	else test ! -e $(DESTDIR)$(sysconfdir)/floe/floe.conf || \
		echo "uninstall: $(DESTDIR)$(sysconfdir)/floe/floe.conf was edited; it stays"; fi
	rm -f $(DESTDIR)$(docdir)/floe.conf.example
	-rmdir $(DESTDIR)$(docdir) $(DESTDIR)$(sysconfdir)/floe \
	    $(DESTDIR)$(rulesdir) 2>/dev/null

# --- make deb: floe_VERSION_ARCH.deb (packaging/deb/build.sh, dpkg-deb).
deb: all
	packaging/deb/build.sh $(B) '$(VERSION)'

clean:
	rm -rf build build-san

.PHONY: all units test check valgrind deps demo demo-reset demo-cluster \
	bench hdrcheck format lint clean version install uninstall deb FORCE
.SECONDARY:

-include $(shell find $(B) -name '*.d' 2>/dev/null)

# --- fuzzing: libFuzzer targets in tests/fuzz/ (clang, ASan + UBSan) ---
# `make fuzz` runs each for FUZZ_TIME seconds; `make fuzz-build` only
# builds them (tests/fuzz/run.sh --regress replays the corpora once).
FUZZ_CC	  = clang
FUZZ_TIME ?= 60
FUZZ_SAN  = -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS = -g -O1 -fno-omit-frame-pointer $(FUZZ_SAN) \
	   $(filter-out -Werror -Wdeclaration-after-statement,$(WFLAGS))
FUZZ_SRCS = $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS = $(patsubst tests/fuzz/%.c,$(B)/fuzz/%,$(FUZZ_SRCS))
FUZZ_LIB  = $(B)/fuzz/libfloe.a

$(B)/fuzz/obj/%.o: %.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link \
	    -c -o $@ $<

$(B)/fuzz/obj/llhttp/%.o: $(LLHTTP_SRC)/%.c
	@mkdir -p $(@D)
	$(FUZZ_CC) -I$(LLHTTP_INC) -g -O1 $(FUZZ_SAN) \
	    -fsanitize=fuzzer-no-link -w -c -o $@ $<

$(FUZZ_LIB): $(patsubst %.c,$(B)/fuzz/obj/%.o,$(CORE_SRCS) $(LIB_SRCS)) \
    $(patsubst $(B)/%,$(B)/fuzz/obj/%,$(LLHTTP_OBJS))
	rm -f $@ && $(AR) rcs $@ $^

$(B)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_LIB)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< \
	    $(FUZZ_LIB) $(LDLIBS)

fuzz-build: $(FUZZ_BINS)

fuzz: fuzz-build
	tests/fuzz/run.sh --fuzz $(B) $(FUZZ_TIME)

.PHONY: fuzz fuzz-build
# --- end of fuzzing ---
