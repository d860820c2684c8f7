/* ctorleak-main.c - the program around ctorleak-lib.c (see there); leaks nothing itself. */
int ctorleak_value(void);

int main(void) { return ctorleak_value() == 7 ? 0 : 1; }
