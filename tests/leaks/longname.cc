/* longname.cc - C++: a leak made in a function whose qualified name runs past 150 characters, as
 * template-heavy C++ names do: the frame must name it whole (it was cut at 127 characters, so a
 * suppression naming its end matched nothing).
 * EXPECT: direct=50/1 indirect=0/0
 * STACK: a_namespace_name_that_is_rather_long_for_a_test::another_namespace_name_that_is_also_long::yet_another_level_past_the_old_limit::make_the_leak main
 * BUILD: -g -O0 -fno-omit-frame-pointer
 */
#include "corpus.h"

namespace a_namespace_name_that_is_rather_long_for_a_test {
namespace another_namespace_name_that_is_also_long {
namespace yet_another_level_past_the_old_limit {
NOINLINE void make_the_leak()
{
	char *p = new char[50];
	KEEP(p);
	p[0] = 1;
}
}
}
}

int main()
{
	a_namespace_name_that_is_rather_long_for_a_test::another_namespace_name_that_is_also_long::
		yet_another_level_past_the_old_limit::make_the_leak();
	scrub_stack();
	return 0;
}
