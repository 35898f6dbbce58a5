SELECT hw_unit();
