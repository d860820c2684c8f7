# scripts/local.mk - the contig launcher and the man pages; included from the top-level Makefile.am.
# contig is generated from scripts/contig.py with the install directory and the version filled in
# (by make, not configure, so that it follows `make libdir=...` and `make install prefix=...`),
# and runs under /usr/bin/python3 where there is one: Debian's python3-matplotlib is installed
# for that python3, not for one found first in a PATH (pyenv and the like).

bin_SCRIPTS = scripts/contig
dist_man_MANS = docs/contig.1 docs/libcontig.3
EXTRA_DIST += scripts/contig.py
CLEANFILES = scripts/contig

scripts/contig: $(srcdir)/scripts/contig.py Makefile
	$(AM_V_GEN)$(MKDIR_P) scripts && \
	if test -x /usr/bin/python3; then py=/usr/bin/python3; else py=`command -v python3 || echo /usr/bin/python3`; fi && \
	sed -e "1s|^#!.*|#!$$py|" -e 's|@libdir[@]|$(libdir)|g' -e 's|@VERSION[@]|$(VERSION)|g' \
		$(srcdir)/scripts/contig.py >$@.tmp && \
	chmod +x $@.tmp && mv -f $@.tmp $@
