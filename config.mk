# kp version and build settings
VERSION = 0.1

PREFIX = /usr/local
MANPREFIX = $(PREFIX)/share/man
# The systemd units and the udev rule go below PREFIX, where systemd and
# udev look too (/usr/local/lib/systemd/system, /usr/local/lib/udev/rules.d);
# make deb puts them in Debian's /lib/systemd/system and /lib/udev/rules.d.
UNITDIR = $(PREFIX)/lib/systemd/system
UDEVDIR = $(PREFIX)/lib/udev/rules.d

PKG_CONFIG = pkg-config
JANSSON_CFLAGS = `$(PKG_CONFIG) --cflags jansson`
JANSSON_LIBS = `$(PKG_CONFIG) --libs jansson`
# rapl-read's source redfish speaks HTTPS through libcurl.
CURL_CFLAGS = `$(PKG_CONFIG) --cflags libcurl`
CURL_LIBS = `$(PKG_CONFIG) --libs libcurl`
# libnvidia-ml is opened at run time with dlopen(3), in glibc's libc since
# 2.34; -ldl for older ones.  Nothing NVIDIA is linked.
DL_LIBS = -ldl

# make SANITIZE=1 builds with clang: its UBSan checks more than gcc's
# (pointer overflow, NULL + 0).  CC= on the command line still wins.
CC_ = cc
CC_0 = cc
CC_1 = clang
CC = $(CC_$(SANITIZE))
CPPFLAGS = -D_GNU_SOURCE -DVERSION=\"$(VERSION)\"
CFLAGS = -std=c11 -O2 -g -Wall -Wextra -Werror
LDFLAGS =
