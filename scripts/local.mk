# scripts/local.mk - the contig launcher and the man pages; included from the top-level Makefile.am.
# contig is generated from scripts/contig.in with the install directory and version filled in
# (by make, not configure, so that it follows `make libdir=...` and `make install prefix=...`).

bin_SCRIPTS = scripts/contig
dist_man_MANS = docs/contig.1 docs/libcontig.3
EXTRA_DIST += scripts/contig.in
CLEANFILES = scripts/contig

scripts/contig: $(srcdir)/scripts/contig.in Makefile
	$(AM_V_GEN)$(MKDIR_P) scripts && \
	sed -e 's|@libdir[@]|$(libdir)|g' -e 's|@VERSION[@]|$(VERSION)|g' \
		$(srcdir)/scripts/contig.in >$@.tmp && \
	chmod +x $@.tmp && mv -f $@.tmp $@
