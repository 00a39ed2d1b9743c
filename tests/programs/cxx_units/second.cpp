#include "mixing.h"
double second(double v) { return mixing::mix({(int) v, 2}) + mixing::Scale<double>::apply(v); }
