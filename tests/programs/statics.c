
int first(void) { static int counter; return ++counter; }
int second(void) { static int counter = 5; return counter += 2; }
static const char *names[] = {"alpha", "beta"};
const char *pick(int i) { return names[i & 1]; }
int main(void) { return first() + second() + (int)pick(0)[0]; }
